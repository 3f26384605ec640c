// Package tasks is the room of tool calls made tasks (SEP-1686 in
// 2025-11-25, the tasks extension SEP-2663 in 2026-07-28): how a tools/call
// goes (plain or task, policy.CallAs), the creating tools/call, tasks/get
// at the poll interval, tasks/result, tasks/cancel when the caller gives
// up, and the ids of the tasks under way in the client's TaskStore, for
// PendingTasks and ResumeTask. It knows nothing of the client: what it
// needs of it (the one call path, its errors, its tools, its lifetime) it
// asks of a Host.
package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/progress"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/client/store"
)

// Host is what the room needs of the client. Its methods are safe for
// concurrent use.
type Host interface {
	// ToolSupport is the listed tool's taskSupport, and whether the client
	// has a listing of the tools at all.
	ToolSupport(name string) (mcp.TaskSupport, bool)
	// LearnTools lists the tools, once for every goroutine.
	LearnTools(ctx context.Context) error

	// Bound bounds a task call (the caller's deadline, else
	// WithMaxCallDuration) and follows it by its progress if its options
	// ask (pc; nil: not followed). end releases what Bound made. err is the
	// call options' own error: the call is not made.
	Bound(ctx context.Context) (bctx context.Context, pc *progress.Call, end func(), err error)
	// Send sends one request of a task call (Request) through the client's
	// one call path, within WithCallTimeout, its attempts followed by pc
	// (nil: none); the creating tools/call carries pc's progressToken and
	// is repeated only as the call's options allow, the others (they only
	// read or settle the task) always may be.
	Send(ctx context.Context, method mcp.MCPMethod, tool string, params map[string]json.RawMessage, name string, pc *progress.Call, creating bool) (json.RawMessage, error)
	// Stateless reports whether the client's sessions are of 2026-07-28.
	Stateless() bool

	// OutcomeUnknown is the client's error of a tools/call that may have
	// run (ErrOutcomeUnknown); closed: it ended with the client's Close.
	OutcomeUnknown(why string, closed bool, cause error, also ...error) error
	// Lost is the client's *TaskLostError.
	Lost(id, tool string, cause error) error
	// Settled reports whether err is neither ErrOutcomeUnknown nor
	// ErrUnavailable: the server answered.
	Settled(err error) bool

	// Store is WithTaskStore's store; nil: the room keeps the ids in
	// memory, for this process only.
	Store() store.TaskStore
	// Endpoint names the client's server in the PendingTasks it writes.
	Endpoint() string
	// Log is the client's logger.
	Log() *slog.Logger

	// Lifetime ends at the client's Close; Closed reports it began.
	Lifetime() context.Context
	Closed() bool
	// Go runs f in the background, counted for Close; false: the client
	// is closed and f was not started.
	Go(f func()) bool
}

// Calls is one client's task calls: what it asks of the client, and the
// TaskStore in memory for a client given none. It is one small allocation
// per client (BenchmarkIdleClients): the rest it asks of the host. It is
// safe for concurrent use; its only lock is the memory store's, a leaf (a
// given store's are the store's).
type Calls struct {
	host Host
	mem  memoryStore
}

// New returns the task calls of the client host.
func New(host Host) *Calls { return &Calls{host: host} }

// store is where the ids of the tasks under way are kept.
func (k *Calls) store() store.TaskStore {
	if s := k.host.Store(); s != nil {
		return s
	}
	return &k.mem
}

// FormOnceListed is how a tools/call goes that policy.CallAs, asked by the
// client before the call, cannot place without a listing of the tools
// (policy.LearnFirst): the tools are listed and the policy asked again;
// if they cannot be listed, plainly, a task if the server refuses it for
// want of one. asked: the caller asked for the call as a task.
func (k *Calls) FormOnceListed(ctx context.Context, name string, asked bool) policy.TaskCall {
	if err := k.host.LearnTools(ctx); err != nil {
		k.host.Log().Warn("could not list the tools to call one as a task; calling it plainly", "tool", name, "err", wire.Describe(err))
		return policy.PlainThenTask
	}
	support, listed := k.host.ToolSupport(name)
	return policy.CallAs(support, listed, asked)
}

// Refused reports whether the answer to a plain tools/call made without a
// listing (policy.PlainThenTask) says that the tool must be called as a
// task (policy.RetryAsTask), the tools having been listed since to know
// it.
func (k *Calls) Refused(ctx context.Context, name string, res *mcp.CallToolResult, err error) bool {
	methodNotFound := err != nil && k.host.Settled(err) && errors.Is(err, mcp.ErrMethodNotFound)
	toolError := err == nil && res != nil && res.IsError
	if !policy.RetryAsTask(methodNotFound, toolError) {
		return false
	}
	if err := k.host.LearnTools(ctx); err != nil {
		return false
	}
	support, _ := k.host.ToolSupport(name)
	return support == mcp.TaskSupportRequired
}

// Pending lists the tasks of the client's endpoint in the store, oldest
// first.
func (k *Calls) Pending(ctx context.Context) ([]store.PendingTask, error) {
	all, err := k.store().List(ctx)
	if err != nil {
		return nil, err
	}
	endpoint := k.host.Endpoint()
	out := slices.DeleteFunc(all, func(t store.PendingTask) bool { return t.Endpoint != endpoint })
	slices.SortFunc(out, func(a, b store.PendingTask) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Find is the task id as the store knows it, for ResumeTask (by its id
// alone if the store cannot be read).
func (k *Calls) Find(ctx context.Context, id string) *State {
	t := &State{PendingTask: store.PendingTask{ID: id, Endpoint: k.host.Endpoint()}}
	if all, err := k.store().List(ctx); err == nil {
		for _, p := range all {
			if p.ID == id {
				t.PendingTask = p
			}
		}
	} else {
		k.host.Log().Warn("could not read the task store; resuming the task by its id alone", "task", id, "err", err)
	}
	return t
}
