package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/progress"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/client/store"
	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// This file follows a task call to its result. Each request goes through
// the client's one call path (Host.Send), so its failures are classified
// and carried out as every request's are; what follows a request that
// gave up is decided in policy.AfterTaskRequest.

// cancelTimeout bounds the tasks/cancel sent when a task call's caller
// gives up: best effort, in the background; a task whose cancel went
// unanswered stays in the TaskStore, for PendingTasks to show.
const cancelTimeout = 10 * time.Second

// State is a task call's task as it knows it.
type State struct {
	store.PendingTask
	last  taskWire // the server's last word on it; Status "" before any
	pause time.Duration
	noted bool // input_required in 2026-07-28 was logged
}

// Run runs a task call: it creates the task (req), or takes one a call
// created before (resume, from Find), and follows it to its result.
func (k *Calls) Run(ctx context.Context, req *mcp.CallToolRequest, resume *State) (*mcp.CallToolResult, error) {
	// A task call is long by choice: its bound is the caller's deadline,
	// else WithMaxCallDuration; WithCallTimeout bounds each request.
	ctx, pc, end, err := k.host.Bound(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	t := resume
	if req != nil {
		res, created, err := k.create(ctx, req, pc)
		if err != nil || created == nil {
			return res, err
		}
		t = created
		// Written before the first question about it: a process killed
		// from here on leaves the id for the next one.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		if err := k.store().Put(sctx, t.PendingTask); err != nil {
			k.host.Log().Error("could not write the task to the task store; it will not survive a restart of this process",
				"task", t.ID, "tool", t.Tool, "err", err)
		}
		cancel()
	}
	return k.await(ctx, t, pc)
}

// create sends the task-augmented tools/call. It returns the task the
// server created, or the tool's result if the server answered at once (a
// server may decline to make a task: SEP-2663), or the call's error.
func (k *Calls) create(ctx context.Context, req *mcp.CallToolRequest, pc *progress.Call) (*mcp.CallToolResult, *State, error) {
	p := req.Params
	if p.Task == nil {
		p.Task = &mcp.TaskParams{}
	}
	var params map[string]json.RawMessage
	fields, err := json.Marshal(p)
	if err == nil {
		err = json.Unmarshal(fields, &params)
	}
	if err != nil || params == nil {
		return nil, nil, fmt.Errorf("resilientmcp: tools/call %s: the request's params are not a JSON object", p.Name)
	}
	raw, err := k.host.Send(ctx, mcp.MethodToolsCall, p.Name, params, p.Name, pc, true)
	if err != nil {
		var rpc *RPCError
		if errors.As(err, &rpc) {
			err = rpc.err // the server's answer, as mcp-go's CallTool returns it
		}
		return nil, nil, err
	}
	var shape struct {
		ResultType string    `json:"resultType"`
		Task       *taskWire `json:"task"`
	}
	var inline taskWire
	if err := json.Unmarshal(raw, &shape); err != nil {
		return nil, nil, k.unusableAnswer(p.Name, err)
	}
	created := shape.Task
	if created == nil || created.TaskID == "" {
		if shape.ResultType != "task" {
			// The server ran it as an ordinary call.
			res, err := mcp.ParseCallToolResult(&raw)
			if err != nil {
				return nil, nil, k.unusableAnswer(p.Name, err)
			}
			return res, nil, nil
		}
		if err := json.Unmarshal(raw, &inline); err != nil || inline.TaskID == "" {
			return nil, nil, k.unusableAnswer(p.Name, errors.New("a task without an id"))
		}
		created = &inline
	}
	k.host.Log().Debug("tool called as a task", "tool", p.Name, "task", created.TaskID)
	return nil, &State{
		PendingTask: store.PendingTask{ID: created.TaskID, Tool: p.Name, ArgsHash: argsHash(p.Arguments), Created: time.Now(), Endpoint: k.host.Endpoint()},
		last:        *created,
	}, nil
}

// unusableAnswer is the error of a creating tools/call whose answer could
// not be read: it ran, or may have, and the same answer would come back.
func (k *Calls) unusableAnswer(tool string, err error) error {
	return k.host.OutcomeUnknown("the answer was not usable (tool "+tool+")", false, err)
}

// await follows t to its result: tasks/get at the poll interval until the
// task is finished, then its result (inline in 2026-07-28, else
// tasks/result).
func (k *Calls) await(ctx context.Context, t *State, pc *progress.Call) (*mcp.CallToolResult, error) {
	t.pause = policy.TaskPollInterval(t.last.interval())
	for {
		if t.last.Status != "" && !k.waits(t) {
			res, err, done := k.outcome(ctx, t, pc)
			if done {
				return res, err
			}
		} else {
			if t.last.Status != "" {
				switch wait.Sleep(ctx, t.pause, k.host.Lifetime().Done()) {
				case wait.Stopped:
					return nil, k.left(t, "the client was closed")
				case wait.Cancelled:
					return nil, k.abandoned(ctx, t, pc)
				}
			}
			raw, err := k.ask(ctx, mcp.MethodTasksGet, t.ID, pc)
			if err != nil {
				if res, err, done := k.afterRequest(ctx, t, pc, err); done {
					return res, err
				}
				t.last.Status = mcp.TaskStatusWorking // ask again after the pause
				continue
			}
			var st taskWire
			if err := json.Unmarshal(raw, &st); err != nil || st.Status == "" {
				k.host.Log().Warn("tasks/get answered with no task status; asking again", "task", t.ID)
				t.last.Status = mcp.TaskStatusWorking
				continue
			}
			t.last = st
			t.pause = policy.TaskPollInterval(st.interval())
		}
	}
}

// waits reports whether the task is still running as far as the client
// can act on it.
func (k *Calls) waits(t *State) bool {
	switch t.last.Status {
	case mcp.TaskStatusWorking:
		return true
	case mcp.TaskStatusInputRequired:
		// 2025-11-25 delivers the server's requests on the tasks/result
		// stream, to the handlers of WithClientOptions. 2026-07-28's
		// tasks/update is not implemented: the task waits for them.
		if k.host.Stateless() {
			if !t.noted {
				t.noted = true
				k.host.Log().Warn("the task waits for input, which tasks/update would give; the client does not implement it and keeps polling", "task", t.ID)
			}
			return true
		}
	}
	return false
}

// outcome acts on a task that finished (or, in 2025-11-25, waits for
// input that tasks/result carries). done: the call ends with res, err.
func (k *Calls) outcome(ctx context.Context, t *State, pc *progress.Call) (res *mcp.CallToolResult, err error, done bool) {
	switch t.last.Status {
	case mcp.TaskStatusCompleted:
		if len(t.last.Result) > 0 {
			res, err := mcp.ParseCallToolResult(&t.last.Result)
			if err != nil {
				return k.delivered(t, nil, k.unusableAnswer(t.Tool, err))
			}
			return k.delivered(t, res, nil)
		}
	case mcp.TaskStatusFailed:
		if t.last.Error != nil {
			return k.delivered(t, nil, t.last.Error.AsError())
		}
	case mcp.TaskStatusCancelled:
		why := "the server cancelled task " + t.ID
		if t.last.StatusMessage != "" {
			why += ": " + t.last.StatusMessage
		}
		return k.delivered(t, nil, k.host.OutcomeUnknown(why, false, nil))
	}
	raw, err := k.ask(ctx, mcp.MethodTasksResult, t.ID, pc)
	if err != nil {
		if res, err, done := k.afterRequest(ctx, t, pc, err); done {
			return res, err, true
		}
		t.last.Status = mcp.TaskStatusWorking // ask about it again after the pause
		return nil, nil, false
	}
	res, err = mcp.ParseCallToolResult(&raw)
	if err != nil {
		err = k.unusableAnswer(t.Tool, err)
	}
	return k.delivered(t, res, err)
}

// delivered ends a call whose task has finished for good: its id leaves
// the store.
func (k *Calls) delivered(t *State, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error, bool) {
	k.forget(t.ID)
	return res, err, true
}

// forget removes a finished task from the store.
func (k *Calls) forget(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := k.store().Delete(ctx, id); err != nil {
		k.host.Log().Warn("could not remove a finished task from the task store", "task", id, "err", err)
	}
}

// ask sends one tasks/* request about id through the call path, within
// WithCallTimeout.
func (k *Calls) ask(ctx context.Context, method mcp.MCPMethod, id string, pc *progress.Call) (json.RawMessage, error) {
	quoted, _ := json.Marshal(id)
	params := map[string]json.RawMessage{"taskId": quoted}
	return k.host.Send(ctx, method, "", params, id, pc, false)
}

// afterRequest carries out policy.AfterTaskRequest for a failed tasks/get
// or tasks/result. done: the call ends with res, err; else it asks again
// after the pause.
func (k *Calls) afterRequest(ctx context.Context, t *State, pc *progress.Call, err error) (*mcp.CallToolResult, error, bool) {
	var rpc *RPCError
	answered := errors.As(err, &rpc) && k.host.Settled(err)
	code, cause := 0, err
	if answered {
		code, cause = rpc.code, rpc.err
	}
	switch policy.AfterTaskRequest(answered, code, ctx.Err() != nil || k.host.Closed()) {
	case policy.TaskCallerGone:
		if k.host.Closed() {
			return nil, k.left(t, "the client was closed"), true
		}
		return nil, k.abandoned(ctx, t, pc), true
	case policy.TaskLost:
		k.host.Log().Warn("the server no longer knows the task; its outcome is unknown", "task", t.ID, "tool", t.Tool, "err", wire.Describe(err))
		return k.delivered(t, nil, k.host.Lost(t.ID, t.Tool, cause))
	case policy.TaskAnswered:
		return k.delivered(t, nil, cause)
	}
	k.host.Log().Info("asking about the task failed; asking again", "task", t.ID, "err", wire.Describe(err), "pause", t.pause)
	return nil, nil, false
}

// left is the error of a task call that ended with its task still
// running and its id kept in the store, for ResumeTask.
func (k *Calls) left(t *State, why string) error {
	return k.host.OutcomeUnknown(why+"; task "+t.ID+" is left in the task store for ResumeTask", true, nil)
}

// abandoned ends a task call whose caller gave up (its context ended): the
// task is cancelled (tasks/cancel, in the background, within
// cancelTimeout), and leaves the store once the server has answered. The
// tool may have run, or part of it.
func (k *Calls) abandoned(ctx context.Context, t *State, pc *progress.Call) error {
	id, tool := t.ID, t.Tool
	started := k.host.Go(func() {
		cctx, cancel := context.WithTimeout(k.host.Lifetime(), cancelTimeout)
		defer cancel()
		_, err := k.ask(cctx, mcp.MethodTasksCancel, id, nil)
		var rpc *RPCError
		switch {
		case err == nil:
			k.host.Log().Info("task cancelled", "task", id, "tool", tool)
		case errors.As(err, &rpc) && k.host.Settled(err):
			// Answered: finished already, or forgotten. Nothing to keep.
			k.host.Log().Info("tasks/cancel answered with an error; the task is over", "task", id, "err", wire.Describe(err))
		default:
			k.host.Log().Warn("tasks/cancel was not answered; the task stays in the task store", "task", id, "err", wire.Describe(err))
			return
		}
		k.forget(id)
	})
	why := "the call's context ended; task " + id + " is being cancelled"
	if !started {
		why = "the call's context ended; task " + id + " is left in the task store (the client was closed)"
	}
	also := []error{ctx.Err()}
	if np := pc.NoProgress(); np != nil {
		also = append(also, np)
	}
	return k.host.OutcomeUnknown(why, false, nil, also...)
}
