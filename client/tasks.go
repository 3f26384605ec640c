package client

import (
	"context"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/store"
	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// PendingTask is a task a call of the client created and whose result has
// not been delivered yet, as a TaskStore keeps it: store.PendingTask.
type PendingTask = store.PendingTask

// TaskStore keeps the ids of the tasks a client's calls created until
// their results are delivered: store.TaskStore, which says what the client
// expects of one.
type TaskStore = store.TaskStore

// NewFileTaskStore returns a TaskStore in dir, created (0700) if need be:
// one machine, surviving restarts of the agent. It is
// store.NewFileTaskStore, which says how it keeps them; safe for
// concurrent use by any number of goroutines and processes of the machine.
func NewFileTaskStore(dir string) (TaskStore, error) { return store.NewFileTaskStore(dir) }

// PendingTasks lists the tasks of this client's endpoint that calls
// created and whose results were not delivered: after a restart of the
// agent, those a previous process left in the TaskStore (WithTaskStore);
// while calls are under way, theirs too. Oldest first. Collect a result
// with ResumeTask.
func (c *ResilientClient) PendingTasks(ctx context.Context) ([]PendingTask, error) {
	return c.tasks.Pending(ctx)
}

// ResumeTask collects the result of a task a call created, by its id, as
// CallTool would have returned it: typically one PendingTasks lists after
// the agent restarted. It polls the task as a task call does, through
// reconnects and outages; its context's deadline bounds it (without one,
// WithMaxCallDuration); cancelling ctx cancels the task (tasks/cancel).
// A task the server no longer knows is *TaskLostError. Once the result is
// delivered, or the server has said the task is gone, the id leaves the
// TaskStore.
func (c *ResilientClient) ResumeTask(ctx context.Context, id string) (*mcp.CallToolResult, error) {
	t := c.tasks.Find(ctx, id)
	var res *mcp.CallToolResult
	err := c.call(ctx, string(mcp.MethodToolsCall), t.Tool, func(ctx context.Context) error {
		var err error
		if res, err = c.tasks.Run(ctx, nil, t); err != nil {
			res = nil
		}
		c.obs.ToolResult(ctx, res)
		return err
	})
	return res, err
}

// The tasks API: every request reads or settles a task the server keeps
// apart from the request that started it, so each is safe to repeat and is
// sent again after any failure a retry can fix, on whatever session is in
// service. Whether a task outlives a restart of the server is the server's
// business: one that keeps tasks only in memory, or ties them to the session
// that created them, answers for a lost task with an error of its own, which
// is returned as is.

// GetTask returns a task's current state (tasks/get).
func (c *ResilientClient) GetTask(ctx context.Context, req mcp.GetTaskRequest) (*mcp.GetTaskResult, error) {
	return mcpCall(ctx, c, mcp.MethodTasksGet, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.GetTaskResult, error) {
		return mc.GetTask(ctx, req)
	})
}

// ListTasksByPage lists one page of the server's tasks (tasks/list).
func (c *ResilientClient) ListTasksByPage(ctx context.Context, req mcp.ListTasksRequest) (*mcp.ListTasksResult, error) {
	return mcpCall(ctx, c, mcp.MethodTasksList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListTasksResult, error) {
		return mc.ListTasksByPage(ctx, req)
	})
}

// ListTasks lists every task, following the pages from req's cursor, as one
// call: a failure a retry can fix lists them again from the first page. A
// server that hands back a cursor it already gave ends the listing with
// mcp-go's ErrRepeatedTaskListCursor.
func (c *ResilientClient) ListTasks(ctx context.Context, req mcp.ListTasksRequest) (*mcp.ListTasksResult, error) {
	return mcpCall(ctx, c, mcp.MethodTasksList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListTasksResult, error) {
		return mc.ListTasks(ctx, req)
	})
}

// TaskResult returns a finished task's result (tasks/result); the server
// holds the request until the task finishes, within ctx.
func (c *ResilientClient) TaskResult(ctx context.Context, req mcp.TaskResultRequest) (*mcp.TaskResultResult, error) {
	return mcpCall(ctx, c, mcp.MethodTasksResult, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.TaskResultResult, error) {
		return mc.TaskResult(ctx, req)
	})
}

// CancelTask asks the server to cancel a task (tasks/cancel) and returns its
// state. A cancel whose answer was lost is sent again; a server that then
// finds the task already cancelled may answer that with an error of its own.
func (c *ResilientClient) CancelTask(ctx context.Context, req mcp.CancelTaskRequest) (*mcp.CancelTaskResult, error) {
	return mcpCall(ctx, c, mcp.MethodTasksCancel, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.CancelTaskResult, error) {
		return mc.CancelTask(ctx, req)
	})
}

// WaitForTask polls a task with GetTask until it reaches a terminal state,
// pausing between polls for the interval the server suggests, else for
// fallbackPollInterval. Each poll is a call of its own, so the wait carries on
// through restarts and outages. If ctx ends between polls the error is
// ErrUnavailable together with ctx's error; a non-positive
// fallbackPollInterval is mcp-go's ErrInvalidFallbackPollInterval, and an
// interval too long for a time.Duration its ErrServerPollIntervalOverflow.
func (c *ResilientClient) WaitForTask(ctx context.Context, req mcp.GetTaskRequest, fallbackPollInterval time.Duration) (*mcp.GetTaskResult, error) {
	if fallbackPollInterval <= 0 {
		return nil, mcpclient.ErrInvalidFallbackPollInterval
	}
	for {
		res, err := c.GetTask(ctx, req)
		if err != nil {
			return nil, err
		}
		if res.Status.IsTerminal() {
			return res, nil
		}
		pause := fallbackPollInterval
		if ms := res.PollInterval; ms != nil && *ms > 0 {
			const maxMillis = int64(1<<63-1) / int64(time.Millisecond)
			if *ms > maxMillis {
				return nil, mcpclient.ErrServerPollIntervalOverflow
			}
			pause = time.Duration(*ms) * time.Millisecond
		}
		switch wait.Sleep(ctx, pause, c.lifetime.Done()) {
		case wait.Stopped:
			return nil, ErrClosed
		case wait.Cancelled:
			return nil, &callError{kind: ErrUnavailable, method: string(mcp.MethodTasksGet),
				why: "the context ended while waiting to poll the task again", also: []error{ctx.Err()}}
		}
	}
}
