package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// This file makes a tools/call a task (SEP-1686 in 2025-11-25, the tasks
// extension SEP-2663 in 2026-07-28) and follows the task to its result.
// mcp-go's client sends params.task but cannot read the answer (a
// CreateTaskResult has no content), and its tasks/get drops what
// 2026-07-28 inlines (the result, the error): so the client writes these
// requests itself, on the session's mcp-go transport, with what mcp-go
// would have added (in 2026-07-28 the per-request _meta and the Mcp-Method
// and Mcp-Name headers). Each request goes through the one call path (run),
// so its failures are classified and carried out as every request's are;
// what follows a request that gave up is decided in
// policy.AfterTaskRequest.

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
		msg += ": " + describe(e.Err)
	}
	return msg
}

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *TaskLostError) Is(target error) bool { return target == ErrOutcomeUnknown }

func (e *TaskLostError) Unwrap() error { return e.Err }

// rpcError is a JSON-RPC error the server answered a request the client
// wrote itself with: mcp-go's error for it (as mcp-go's own methods return
// it), and the code, which the task decisions read.
type rpcError struct {
	code int
	err  error
}

func (e *rpcError) Error() string { return e.err.Error() }
func (e *rpcError) Unwrap() error { return e.err }

// tasksExtension is SEP-2663's extension id, declared in a 2026-07-28
// request's client capabilities.
const tasksExtension = "io.modelcontextprotocol/tasks"

// taskCancelTimeout bounds the tasks/cancel sent when a task call's caller
// gives up: best effort, in the background; a task whose cancel went
// unanswered stays in the TaskStore, for PendingTasks to show.
const taskCancelTimeout = 10 * time.Second

// rawRequestSeq numbers the requests the client writes itself. Their ids
// are strings, which never equal mcp-go's integer ids on the same session.
var rawRequestSeq atomic.Uint64

// rawRequest sends method with params on s's transport and returns the
// result as it came. name is the request's Mcp-Name in 2026-07-28 (the
// tool's name on tools/call, the task id on tasks/*).
func (c *ResilientClient) rawRequest(ctx context.Context, s *session, method mcp.MCPMethod, params map[string]json.RawMessage, name string) (json.RawMessage, error) {
	var header http.Header
	var body any = params
	if !s.sessionEra {
		caps := s.mc.GetClientCapabilities()
		caps.Extensions = maps.Clone(caps.Extensions)
		if caps.Extensions == nil {
			caps.Extensions = map[string]any{}
		}
		caps.Extensions[tasksExtension] = map[string]any{}
		version, err := json.Marshal(s.version)
		if err != nil {
			return nil, err
		}
		capsRaw, err := json.Marshal(caps)
		if err != nil {
			return nil, err
		}
		var info json.RawMessage
		if ci := s.request.Params.ClientInfo; ci.Name != "" {
			if info, err = json.Marshal(ci); err != nil {
				return nil, err
			}
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		edited := wire.EditParams(raw, func(e *wire.Edit) {
			e.SetMeta(mcp.MetaKeyProtocolVersion, version)
			e.SetMeta(mcp.MetaKeyClientCapabilities, capsRaw)
			if info != nil {
				e.SetMeta(mcp.MetaKeyClientInfo, info)
			}
		})
		if edited == nil {
			return nil, fmt.Errorf("resilientmcp: %s: the request's _meta is not a JSON object", method)
		}
		body = json.RawMessage(edited)
		header = http.Header{}
		header.Set(mcp.HeaderMethod, string(method))
		if v, ok := mcp.EncodeHeaderValue(name); ok {
			header.Set(mcp.HeaderName, v)
		}
	}
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId("resilientmcp-" + strconv.FormatUint(rawRequestSeq.Add(1), 10)),
		Method:  string(method),
		Params:  body,
		Header:  header,
	}
	resp, err := s.mc.GetTransport().SendRequest(ctx, req)
	if err != nil {
		return nil, transport.NewError(err) // as mcp-go's client wraps it
	}
	if resp.Error != nil {
		return nil, &rpcError{code: resp.Error.Code, err: resp.Error.AsError()}
	}
	return resp.Result, nil
}

// taskWire is a task as tasks/get answers it, and as a CreateTaskResult
// carries it: under "task" in 2025-11-25, inline in 2026-07-28, where a
// finished task also carries its result or error.
type taskWire struct {
	TaskID         string                   `json:"taskId"`
	Status         mcp.TaskStatus           `json:"status"`
	StatusMessage  string                   `json:"statusMessage,omitempty"`
	PollInterval   *int64                   `json:"pollInterval,omitempty"`   // 2025-11-25
	PollIntervalMs *int64                   `json:"pollIntervalMs,omitempty"` // 2026-07-28
	Result         json.RawMessage          `json:"result,omitempty"`         // 2026-07-28, completed
	Error          *mcp.JSONRPCErrorDetails `json:"error,omitempty"`          // 2026-07-28, failed
}

func (t *taskWire) interval() *int64 {
	if t.PollIntervalMs != nil {
		return t.PollIntervalMs
	}
	return t.PollInterval
}

// taskState is a task call's task as it knows it.
type taskState struct {
	PendingTask
	last  taskWire // the server's last word on it; Status "" before any
	pause time.Duration
	noted bool // input_required in 2026-07-28 was logged
}

// toolCallForm is how a tools/call goes (policy.CallAs), decided before
// it is sent: listing the tools first if the policy asks, and if they
// cannot be listed, plainly, a task if the server refuses it for want of
// one.
func (c *ResilientClient) toolCallForm(ctx context.Context, name string) policy.TaskCall {
	o := callOptionsOf(ctx)
	asked := c.opts.taskCalls || o != nil && o.asTask
	support, listed := c.taskSupport(name)
	form := policy.CallAs(support, listed, asked)
	if form != policy.LearnFirst {
		return form
	}
	if err := c.listings.LearnTools(ctx); err != nil {
		c.log.Warn("could not list the tools to call one as a task; calling it plainly", "tool", name, "err", describe(err))
		return policy.PlainThenTask
	}
	support, listed = c.taskSupport(name)
	return policy.CallAs(support, listed, asked)
}

// taskSupport is the listed tool's taskSupport, and whether the client has
// a listing of the tools at all. It reads the one field it needs of the
// cached tool, on every tools/call, rather than a copy of the tool.
func (c *ResilientClient) taskSupport(name string) (mcp.TaskSupport, bool) {
	return c.listings.TaskSupport(name)
}

// refusedForTask reports whether the answer to a plain tools/call made
// without a listing (policy.PlainThenTask) says that the tool must be
// called as a task (policy.RetryAsTask), the tools having been listed
// since to know it.
func (c *ResilientClient) refusedForTask(ctx context.Context, name string, res *mcp.CallToolResult, err error) bool {
	methodNotFound := err != nil && !errors.Is(err, ErrOutcomeUnknown) && !errors.Is(err, ErrUnavailable) && errors.Is(err, mcp.ErrMethodNotFound)
	toolError := err == nil && res != nil && res.IsError
	if !policy.RetryAsTask(methodNotFound, toolError) {
		return false
	}
	if err := c.listings.LearnTools(ctx); err != nil {
		return false
	}
	support, _ := c.taskSupport(name)
	return support == mcp.TaskSupportRequired
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
	t := &taskState{PendingTask: PendingTask{ID: id, Endpoint: c.endpoint}}
	if all, err := c.taskStore().List(ctx); err == nil {
		for _, p := range all {
			if p.ID == id {
				t.PendingTask = p
			}
		}
	} else {
		c.log.Warn("could not read the task store; resuming the task by its id alone", "task", id, "err", err)
	}
	var res *mcp.CallToolResult
	err := c.call(ctx, string(mcp.MethodToolsCall), t.Tool, func(ctx context.Context) error {
		var err error
		if res, err = c.runTask(ctx, nil, t); err != nil {
			res = nil
		}
		c.obs.ToolResult(ctx, res)
		return err
	})
	return res, err
}

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

// runTask runs a task call: it creates the task (req), or takes one a call
// created before (resume), and follows it to its result.
func (c *ResilientClient) runTask(ctx context.Context, req *mcp.CallToolRequest, resume *taskState) (*mcp.CallToolResult, error) {
	o := callOptionsOf(ctx)
	if o != nil && o.invalid != nil {
		return nil, o.invalid
	}
	// A task call is long by choice: its bound is the caller's deadline,
	// else WithMaxCallDuration; WithCallTimeout bounds each request.
	var pc *progressCall
	idle, onProgress, followed := governs(c.opts.progressTimeout, o)
	if followed {
		pc = new(progressCall)
		ctx, _ = c.bound(ctx, pc, idle, onProgress, true)
		defer pc.End()
	} else {
		var cancel context.CancelFunc
		ctx, cancel = c.bound(ctx, nil, 0, nil, true)
		defer cancel()
	}

	t := resume
	if req != nil {
		res, created, err := c.createTask(ctx, req, pc)
		if err != nil || created == nil {
			return res, err
		}
		t = created
		// Written before the first question about it: a process killed
		// from here on leaves the id for the next one.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskStoreTimeout)
		if err := c.taskStore().Put(sctx, t.PendingTask); err != nil {
			c.log.Error("could not write the task to the task store; it will not survive a restart of this process",
				"task", t.ID, "tool", t.Tool, "err", err)
		}
		cancel()
	}
	return c.awaitTask(ctx, t, pc)
}

// createTask sends the task-augmented tools/call. It returns the task the
// server created, or the tool's result if the server answered at once (a
// server may decline to make a task: SEP-2663), or the call's error.
func (c *ResilientClient) createTask(ctx context.Context, req *mcp.CallToolRequest, pc *progressCall) (*mcp.CallToolResult, *taskState, error) {
	p := req.Params
	if p.Task == nil {
		p.Task = &mcp.TaskParams{}
	}
	params, ok := wire.ObjectFields(p)
	if !ok {
		return nil, nil, fmt.Errorf("resilientmcp: tools/call %s: the request's params are not a JSON object", p.Name)
	}
	rctx, cancel := context.WithTimeout(taskOptions(ctx, true), c.opts.callTimeout)
	defer cancel()
	raw, err := c.taskRequest(rctx, mcp.MethodToolsCall, p.Name, params, p.Name, pc, true)
	if err != nil {
		var rpc *rpcError
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
		return nil, nil, c.unusableAnswer(p.Name, err)
	}
	created := shape.Task
	if created == nil || created.TaskID == "" {
		if shape.ResultType != "task" {
			// The server ran it as an ordinary call.
			res, err := mcp.ParseCallToolResult(&raw)
			if err != nil {
				return nil, nil, c.unusableAnswer(p.Name, err)
			}
			return res, nil, nil
		}
		if err := json.Unmarshal(raw, &inline); err != nil || inline.TaskID == "" {
			return nil, nil, c.unusableAnswer(p.Name, errors.New("a task without an id"))
		}
		created = &inline
	}
	c.log.Debug("tool called as a task", "tool", p.Name, "task", created.TaskID)
	return nil, &taskState{
		PendingTask: PendingTask{ID: created.TaskID, Tool: p.Name, ArgsHash: argsHash(p.Arguments), Created: time.Now(), Endpoint: c.endpoint},
		last:        *created,
	}, nil
}

// unusableAnswer is the error of a creating tools/call whose answer could
// not be read: it ran, or may have, and the same answer would come back.
func (c *ResilientClient) unusableAnswer(tool string, err error) error {
	return &callError{kind: ErrOutcomeUnknown, method: string(mcp.MethodToolsCall), why: "the answer was not usable (tool " + tool + ")", cause: err}
}

// awaitTask follows t to its result: tasks/get at the poll interval until
// the task is finished, then its result (inline in 2026-07-28, else
// tasks/result).
func (c *ResilientClient) awaitTask(ctx context.Context, t *taskState, pc *progressCall) (*mcp.CallToolResult, error) {
	t.pause = policy.TaskPollInterval(t.last.interval())
	for {
		if t.last.Status != "" && !c.taskWaits(t) {
			res, err, done := c.taskOutcome(ctx, t, pc)
			if done {
				return res, err
			}
		} else {
			if t.last.Status != "" {
				switch wait.Sleep(ctx, t.pause, c.lifetime.Done()) {
				case wait.Stopped:
					return nil, c.taskLeft(t, "the client was closed")
				case wait.Cancelled:
					return nil, c.taskAbandoned(ctx, t, pc)
				}
			}
			raw, err := c.askTask(ctx, mcp.MethodTasksGet, t.ID, pc)
			if err != nil {
				if res, err, done := c.afterTaskRequest(ctx, t, pc, err); done {
					return res, err
				}
				t.last.Status = mcp.TaskStatusWorking // ask again after the pause
				continue
			}
			var st taskWire
			if err := json.Unmarshal(raw, &st); err != nil || st.Status == "" {
				c.log.Warn("tasks/get answered with no task status; asking again", "task", t.ID)
				t.last.Status = mcp.TaskStatusWorking
				continue
			}
			t.last = st
			t.pause = policy.TaskPollInterval(st.interval())
		}
	}
}

// taskWaits reports whether the task is still running as far as the
// client can act on it.
func (c *ResilientClient) taskWaits(t *taskState) bool {
	switch t.last.Status {
	case mcp.TaskStatusWorking:
		return true
	case mcp.TaskStatusInputRequired:
		// 2025-11-25 delivers the server's requests on the tasks/result
		// stream, to the handlers of WithClientOptions. 2026-07-28's
		// tasks/update is not implemented: the task waits for them.
		if vs := c.sess.pool.Values(); len(vs) > 0 && !vs[0].sessionEra {
			if !t.noted {
				t.noted = true
				c.log.Warn("the task waits for input, which tasks/update would give; the client does not implement it and keeps polling", "task", t.ID)
			}
			return true
		}
	}
	return false
}

// taskOutcome acts on a task that finished (or, in 2025-11-25, waits for
// input that tasks/result carries). done: the call ends with res, err.
func (c *ResilientClient) taskOutcome(ctx context.Context, t *taskState, pc *progressCall) (res *mcp.CallToolResult, err error, done bool) {
	switch t.last.Status {
	case mcp.TaskStatusCompleted:
		if len(t.last.Result) > 0 {
			res, err := mcp.ParseCallToolResult(&t.last.Result)
			if err != nil {
				return c.taskDelivered(t, nil, c.unusableAnswer(t.Tool, err))
			}
			return c.taskDelivered(t, res, nil)
		}
	case mcp.TaskStatusFailed:
		if t.last.Error != nil {
			return c.taskDelivered(t, nil, t.last.Error.AsError())
		}
	case mcp.TaskStatusCancelled:
		why := "the server cancelled task " + t.ID
		if t.last.StatusMessage != "" {
			why += ": " + t.last.StatusMessage
		}
		return c.taskDelivered(t, nil, &callError{kind: ErrOutcomeUnknown, method: string(mcp.MethodToolsCall), why: why})
	}
	raw, err := c.askTask(ctx, mcp.MethodTasksResult, t.ID, pc)
	if err != nil {
		if res, err, done := c.afterTaskRequest(ctx, t, pc, err); done {
			return res, err, true
		}
		t.last.Status = mcp.TaskStatusWorking // ask about it again after the pause
		return nil, nil, false
	}
	res, err = mcp.ParseCallToolResult(&raw)
	if err != nil {
		err = c.unusableAnswer(t.Tool, err)
	}
	return c.taskDelivered(t, res, err)
}

// taskDelivered ends a call whose task has finished for good: its id
// leaves the store.
func (c *ResilientClient) taskDelivered(t *taskState, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error, bool) {
	c.forgetTask(t.ID)
	return res, err, true
}

// forgetTask removes a finished task from the store.
func (c *ResilientClient) forgetTask(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), taskStoreTimeout)
	defer cancel()
	if err := c.taskStore().Delete(ctx, id); err != nil {
		c.log.Warn("could not remove a finished task from the task store", "task", id, "err", err)
	}
}

// askTask sends one tasks/* request about id through the call path, within
// WithCallTimeout.
func (c *ResilientClient) askTask(ctx context.Context, method mcp.MCPMethod, id string, pc *progressCall) (json.RawMessage, error) {
	rctx, cancel := context.WithTimeout(taskOptions(ctx, false), c.opts.callTimeout)
	defer cancel()
	quoted, _ := json.Marshal(id)
	params := map[string]json.RawMessage{"taskId": quoted}
	return c.taskRequest(rctx, method, "", params, id, pc, false)
}

// taskRequest sends one request of a task call (rawRequest) through the
// pipeline (callRun), its attempts followed by the task call's progress pc
// (nil: none); the creating tools/call (token) carries pc's progressToken.
func (c *ResilientClient) taskRequest(ctx context.Context, method mcp.MCPMethod, tool string, params map[string]json.RawMessage, name string, pc *progressCall, token bool) (json.RawMessage, error) {
	var r callRun
	ctx, err := c.startRun(&r, ctx, string(method), tool)
	if err != nil {
		return nil, err
	}
	defer r.finish()
	r.follow(pc, token)
	var raw json.RawMessage
	err = r.run(ctx, func(ctx context.Context, s *session) error {
		var err error
		raw, err = c.rawRequest(ctx, s, method, params, name)
		return err
	})
	return raw, err
}

// afterTaskRequest carries out policy.AfterTaskRequest for a failed
// tasks/get or tasks/result. done: the call ends with res, err; else it
// asks again after the pause.
func (c *ResilientClient) afterTaskRequest(ctx context.Context, t *taskState, pc *progressCall, err error) (*mcp.CallToolResult, error, bool) {
	var rpc *rpcError
	answered := errors.As(err, &rpc) && !errors.Is(err, ErrOutcomeUnknown) && !errors.Is(err, ErrUnavailable)
	code, cause := 0, err
	if answered {
		code, cause = rpc.code, rpc.err
	}
	switch policy.AfterTaskRequest(answered, code, ctx.Err() != nil || c.closed.Load()) {
	case policy.TaskCallerGone:
		if c.closed.Load() {
			return nil, c.taskLeft(t, "the client was closed"), true
		}
		return nil, c.taskAbandoned(ctx, t, pc), true
	case policy.TaskLost:
		c.log.Warn("the server no longer knows the task; its outcome is unknown", "task", t.ID, "tool", t.Tool, "err", describe(err))
		return c.taskDelivered(t, nil, &TaskLostError{TaskID: t.ID, Tool: t.Tool, Err: cause})
	case policy.TaskAnswered:
		return c.taskDelivered(t, nil, cause)
	}
	c.log.Info("asking about the task failed; asking again", "task", t.ID, "err", describe(err), "pause", t.pause)
	return nil, nil, false
}

// taskLeft is the error of a task call that ended with its task still
// running and its id kept in the store, for ResumeTask.
func (c *ResilientClient) taskLeft(t *taskState, why string) error {
	return &callError{kind: ErrOutcomeUnknown, closed: true, method: string(mcp.MethodToolsCall),
		why: why + "; task " + t.ID + " is left in the task store for ResumeTask"}
}

// taskAbandoned ends a task call whose caller gave up (its context ended):
// the task is cancelled (tasks/cancel, in the background, within
// taskCancelTimeout), and leaves the store once the server has answered.
// The tool may have run, or part of it.
func (c *ResilientClient) taskAbandoned(ctx context.Context, t *taskState, pc *progressCall) error {
	id, tool := t.ID, t.Tool
	started := c.goBackground(func() {
		cctx, cancel := context.WithTimeout(c.lifetime, taskCancelTimeout)
		defer cancel()
		_, err := c.askTask(cctx, mcp.MethodTasksCancel, id, nil)
		var rpc *rpcError
		switch {
		case err == nil:
			c.log.Info("task cancelled", "task", id, "tool", tool)
		case errors.As(err, &rpc) && !errors.Is(err, ErrOutcomeUnknown) && !errors.Is(err, ErrUnavailable):
			// Answered: finished already, or forgotten. Nothing to keep.
			c.log.Info("tasks/cancel answered with an error; the task is over", "task", id, "err", describe(err))
		default:
			c.log.Warn("tasks/cancel was not answered; the task stays in the task store", "task", id, "err", describe(err))
			return
		}
		c.forgetTask(id)
	})
	why := "the call's context ended; task " + id + " is being cancelled"
	if !started {
		why = "the call's context ended; task " + id + " is left in the task store (the client was closed)"
	}
	also := []error{ctx.Err()}
	if np := pc.NoProgress(); np != nil {
		also = append(also, np)
	}
	return &callError{kind: ErrOutcomeUnknown, method: string(mcp.MethodToolsCall), why: why, also: also}
}
