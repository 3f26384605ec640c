package client

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/tasks"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// A tools/call made a task (SEP-1686 in 2025-11-25, the tasks extension
// SEP-2663 in 2026-07-28) is followed to its result by the room
// client/internal/tasks; this file is what the room asks of the client
// (taskHost): the one call path its requests go through, the client's
// errors, its tools, its lifetime.

// DefaultTaskPollInterval, one second, is how often a task call asks about
// its task when the server suggests no interval (mcp-go suggests none;
// server-everything and the TypeScript SDK 1 s). A server's suggestion is
// honoured between 50 ms and a minute.
const DefaultTaskPollInterval = policy.DefaultTaskPollInterval

// TaskLostError is the error of a call whose task the server no longer
// knows: it answered a tasks/get or tasks/result for the id with JSON-RPC
// -32602, invalid params, whatever its message ("task not found", "task has
// expired"): the id is the only parameter. The server restarted without
// keeping its tasks, or bound the task to a session that expired, or let
// the task expire. The tool may have run, all or part of it: the error
// matches ErrOutcomeUnknown, never ErrUnavailable, and the call is never
// sent again. TaskID names the task, for the caller to log or reconcile.
// Like every error the client returns, it is immutable and safe to share
// between goroutines.
type TaskLostError struct {
	TaskID string
	Tool   string // the tool called, "" if the store did not say
	Err    error  // the server's answer
}

func (e *TaskLostError) Error() string {
	tool := e.Tool
	if tool == "" {
		tool = "tool"
	}
	msg := "resilientmcp: tools/call " + tool + ": outcome unknown, the request may have run on the server: task " +
		e.TaskID + " lost: the server no longer knows it"
	if e.Err != nil {
		msg += ": " + wire.Describe(e.Err)
	}
	return msg
}

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *TaskLostError) Is(target error) bool { return target == ErrOutcomeUnknown }

func (e *TaskLostError) Unwrap() error { return e.Err }

// taskOptions returns ctx with the options of the requests a task call
// makes on its behalf: not governed on their own (the task call is), and,
// for all but the creating tools/call, safe to repeat whatever the call's
// options say: they only read or settle the task.
func taskOptions(ctx context.Context, creating bool) context.Context {
	o := callOptions{ofTask: true}
	if prev := callOptionsOf(ctx); prev != nil {
		o.failFast = prev.failFast
		if creating {
			o.repeat = prev.repeat
		}
	}
	return context.WithValue(ctx, callOptionsKey{}, &o)
}

// taskHost is the client as the task room sees it (tasks.Host): the same
// struct, so that handing it over allocates nothing.
type taskHost ResilientClient

var _ tasks.Host = (*taskHost)(nil)

func (h *taskHost) client() *ResilientClient { return (*ResilientClient)(h) }

func (h *taskHost) LearnTools(ctx context.Context) error { return h.listings.LearnTools(ctx) }

func (h *taskHost) ToolSupport(name string) (mcp.TaskSupport, bool) {
	return h.listings.TaskSupport(name)
}

func (h *taskHost) Bound(ctx context.Context) (context.Context, *progressCall, func(), error) {
	c := h.client()
	o := callOptionsOf(ctx)
	if o != nil && o.invalid != nil {
		return nil, nil, nil, o.invalid
	}
	idle, onProgress, followed := governs(c.opts.progressTimeout, o)
	if followed {
		pc := new(progressCall)
		ctx, _ = c.bound(ctx, pc, idle, onProgress, true)
		return ctx, pc, pc.End, nil
	}
	ctx, cancel := c.bound(ctx, nil, 0, nil, true)
	return ctx, nil, cancel, nil
}

// Send sends one request of a task call (tasks.Request) through the
// pipeline (callRun), within WithCallTimeout.
func (h *taskHost) Send(ctx context.Context, method mcp.MCPMethod, tool string, params map[string]json.RawMessage, name string, pc *progressCall, creating bool) (json.RawMessage, error) {
	c := h.client()
	ctx, cancel := context.WithTimeout(taskOptions(ctx, creating), c.opts.callTimeout)
	defer cancel()
	var r callRun
	ctx, err := c.startRun(&r, ctx, string(method), tool)
	if err != nil {
		return nil, err
	}
	defer r.finish()
	r.follow(pc, creating)
	var raw json.RawMessage
	err = r.run(ctx, func(ctx context.Context, s *session) error {
		var err error
		raw, err = tasks.Request(ctx, tasks.Session{MC: s.mc, SessionEra: s.sessionEra, Version: s.version, ClientInfo: s.request.Params.ClientInfo}, method, params, name)
		return err
	})
	return raw, err
}

func (h *taskHost) Stateless() bool {
	vs := h.sess.pool.Values()
	return len(vs) > 0 && !vs[0].sessionEra
}

func (h *taskHost) OutcomeUnknown(why string, closed bool, cause error, also ...error) error {
	return &callError{kind: ErrOutcomeUnknown, closed: closed, method: string(mcp.MethodToolsCall), why: why, cause: cause, also: also}
}

func (h *taskHost) Lost(id, tool string, cause error) error {
	return &TaskLostError{TaskID: id, Tool: tool, Err: cause}
}

func (h *taskHost) Settled(err error) bool {
	return !errors.Is(err, ErrOutcomeUnknown) && !errors.Is(err, ErrUnavailable)
}

func (h *taskHost) Store() TaskStore          { return h.opts.taskStore }
func (h *taskHost) Endpoint() string          { return h.endpoint }
func (h *taskHost) Log() *slog.Logger         { return h.log }
func (h *taskHost) Lifetime() context.Context { return h.lifetime }
func (h *taskHost) Closed() bool              { return h.closed.Load() }
func (h *taskHost) Go(f func()) bool          { return h.client().goBackground(f) }
