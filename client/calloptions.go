package client

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// A CallOption governs one call, as gRPC's CallOptions do. mcp-go's
// MCPClient methods have fixed signatures, so a call's options ride on its
// context (as gRPC metadata and OpenTelemetry baggage do): see
// WithCallOptions.
type CallOption interface{ applyCall(*callOptions) }

type callOptionFunc func(*callOptions)

func (f callOptionFunc) applyCall(o *callOptions) { f(o) }

// callOptions is what a call's CallOptions say. The zero value is a call
// without options. A callOptions on a context is never changed: options
// added to a context that has some are applied to a copy.
type callOptions struct {
	// progressTimeout: the call ends after this long without progress;
	// 0: not governed by progress (WithProgressTimeout may still govern
	// it).
	progressTimeout time.Duration
	onProgress      func(mcp.ProgressNotification)
	repeat          policy.Repeat
	failFast        bool
	asTask          bool  // AsTask
	fresh           bool  // Fresh
	invalid         error // the first invalid option: every call made with it fails with it
	// ofTask: a request a task call makes on its behalf (the creating
	// tools/call, tasks/get, tasks/result, tasks/cancel). The task call
	// follows its progress as a whole (client/internal/tasks), so such a request is
	// not governed on its own.
	ofTask bool
}

type callOptionsKey struct{}

// WithCallOptions returns ctx carrying opts for every call made with it (or
// with a context derived from it). Options added to a context that already
// carries some are applied after them: for options given twice, the last
// wins. A call made with a context without options costs what it did
// before options existed.
//
//	ctx := client.WithCallOptions(ctx, client.ProgressTimeout(30*time.Second), client.NeverRepeat())
//	res, err := c.CallTool(ctx, req)
func WithCallOptions(ctx context.Context, opts ...CallOption) context.Context {
	o := new(callOptions)
	if prev, ok := ctx.Value(callOptionsKey{}).(*callOptions); ok {
		*o = *prev
	}
	for _, opt := range opts {
		if opt != nil {
			opt.applyCall(o)
		}
	}
	return context.WithValue(ctx, callOptionsKey{}, o)
}

// callOptionsOf is the options ctx carries; nil without any.
func callOptionsOf(ctx context.Context) *callOptions {
	o, _ := ctx.Value(callOptionsKey{}).(*callOptions)
	return o
}

// ProgressTimeout governs the call by the work it reports rather than by a
// wall clock: the call ends when no notifications/progress for it has come
// for idle. The client puts a progressToken in the request's _meta (a
// caller's own token is kept, and must then be unique among its requests in
// flight, as MCP requires), and every progress notification for it, on any
// stream of any session of the client, moves the idle deadline. The idle
// clock runs only while the request is out: waiting for a session does not
// count against it.
//
// The call's absolute bound is then the shorter of its context's deadline
// and WithMaxCallDuration (WithCallTimeout does not apply). A call ended for
// want of progress, or at that bound, after it was sent is ErrOutcomeUnknown
// with context.DeadlineExceeded in its chain (and *ProgressTimeoutError for
// want of progress); it is never sent again, and the server is told
// (notifications/cancelled in the session era; the request's stream closed
// in 2026-07-28). idle must be positive.
func ProgressTimeout(idle time.Duration) CallOption {
	return callOptionFunc(func(o *callOptions) {
		if idle <= 0 {
			o.invalidf("ProgressTimeout(%v): the idle timeout must be positive", idle)
			return
		}
		o.progressTimeout = idle
	})
}

// OnProgress has f called with each notifications/progress of this call,
// in the order they arrived, and none of any other call's, through its
// retries (resends and replays) and reconnects. f runs on a goroutine of the call's own, so a
// slow f does not stall the session; notifications that arrive while f runs
// are queued (up to 1024; beyond, the newest are dropped and counted in
// Stats().DroppedNotifications). Every notification that arrived before the
// call's answer is delivered before the call returns, and f is never called
// after: the call waits for the queue to be delivered. The
// client puts a progressToken in the request as ProgressTimeout does.
func OnProgress(f func(mcp.ProgressNotification)) CallOption {
	return callOptionFunc(func(o *callOptions) { o.onProgress = f })
}

// SafeToRepeat says that the call may be sent again after an attempt whose
// outcome is unknown (a connection cut after it was sent, a 502), whatever
// the tool's annotations say: for a tool without annotations that the
// caller knows to be idempotent.
func SafeToRepeat() CallOption {
	return callOptionFunc(func(o *callOptions) { o.repeat = policy.RepeatAlways })
}

// NeverRepeat says that the call must not be sent again after an attempt
// whose outcome is unknown, whatever the method or the tool's annotations
// say: such a call returns ErrOutcomeUnknown instead. A request that
// provably did not run (a refused connection, a 503, an expired session) is
// still sent again: nothing ran.
func NeverRepeat() CallOption {
	return callOptionFunc(func(o *callOptions) { o.repeat = policy.RepeatNever })
}

// FailFast says that the call would rather fail than wait for a session:
// when the client has no session in service and the last dial failed, the
// call ends at once with ErrUnavailable (it did not run). While the first
// dial (a member's first, or a reconnect's) is under way, the call waits for
// it (within its deadline): a restart is often over by then. This is gRPC's
// default (its WaitForReady(false)); the client's default is to wait,
// within the deadline, through a restart.
func FailFast() CallOption {
	return callOptionFunc(func(o *callOptions) { o.failFast = true })
}

// AsTask says that a tools/call of a tool whose execution.taskSupport is
// "optional" is made as a task (a tool whose taskSupport is "required" is
// made as one whatever the options say): the server answers at once with a
// task id, and the client polls the task (tasks/get, at the interval the
// server suggests, else DefaultTaskPollInterval) and returns the tool's
// result (tasks/result) as CallTool always does. Once the server has
// answered with the id, a cut connection, a new session or an outage is
// followed by asking about the same id again, never by sending the call
// again; the id is kept in the client's TaskStore until the result is
// delivered (WithTaskStore). Cancelling ctx cancels the task (tasks/cancel).
// A server that no longer knows the task ends the call with *TaskLostError.
// Options that govern other calls apply to a task call as a whole:
// OnProgress has the task's progress, and the call is bounded by its
// context's deadline, else by WithMaxCallDuration (WithCallTimeout bounds
// each of its requests instead). Other methods ignore AsTask.
func AsTask() CallOption {
	return callOptionFunc(func(o *callOptions) { o.asTask = true })
}

func (o *callOptions) invalidf(format string, args ...any) {
	if o.invalid == nil {
		o.invalid = fmt.Errorf("resilientmcp: invalid call option: "+format, args...)
	}
}
