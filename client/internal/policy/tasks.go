package policy

import (
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The decisions of a tools/call made as a task (SEP-1686, and SEP-2663 in
// 2026-07-28): whether to make it one, how often to poll it, and what a
// failed poll means. Once the server has answered with a task id, the
// outcome is no longer unknown: every failure after it is followed by
// asking about the same id again, never by sending the call again.

// TaskCall is how a tools/call is sent.
type TaskCall uint8

const (
	// CallPlain: an ordinary tools/call.
	CallPlain TaskCall = iota
	// CallAsTask: a task-augmented tools/call, polled to its result.
	CallAsTask
	// LearnFirst: the caller asked for a task and the client has not seen
	// the tool: list the tools (once, for every caller), then decide again.
	LearnFirst
	// PlainThenTask: an ordinary tools/call of a tool the client has no
	// listing to judge by; should the server refuse it as it refuses a
	// plain call of a tool that requires a task (RetryAsTask), the tools
	// are listed, and a tool the listing says requires one is called again
	// as a task, within the same call.
	PlainThenTask
)

// CallAs decides how a tools/call is sent. support is the tool's
// execution.taskSupport as last listed ("" if the listing has no such tool
// or the tool says nothing), listed whether the client has a listing of the
// tools at all, asked whether the call's options (AsTask, WithTaskCalls) ask
// for a task. A tool that requires a task is called as one whatever the
// options say; one that allows it, when asked. Without a listing, a call
// that asks for a task lists the tools first; one that does not is sent
// plainly, with no request of its own (PlainThenTask: a tool that requires
// a task then refuses it once). The one decision of a call's form, made
// before it is sent.
func CallAs(support mcp.TaskSupport, listed, asked bool) TaskCall {
	switch {
	case support == mcp.TaskSupportRequired:
		return CallAsTask
	case support == mcp.TaskSupportOptional && asked:
		return CallAsTask
	case !listed && asked:
		return LearnFirst
	case !listed:
		return PlainThenTask
	}
	return CallPlain
}

// RetryAsTask reports whether a plain tools/call sent without a listing of
// the tools (PlainThenTask) should be sent again as a task once the tools
// are listed: the server refused it as it refuses a plain call of
// a tool whose taskSupport is required, which it never runs: mcp-go
// answers -32601 (methodNotFound); the TypeScript SDK turns that error
// into a tool result with isError (toolError), whose text is all that
// would tell the two apart, so any tool error of a tool not yet listed
// counts (one listing, once per client, decides: only a tool the listing
// says requires a task is called again). With a listing, a tool that
// requires a task is called as one at once (CallAs).
func RetryAsTask(methodNotFound, toolError bool) bool {
	return methodNotFound || toolError
}

// Poll interval bounds. DefaultTaskPollInterval is used when the server
// suggests none (mcp-go suggests none; server-everything 1 s, the TypeScript
// SDK's default): one request a second per running task is cheap for any
// server and adds at most a second to a result that took seconds to
// minutes, which is what tasks are for. A suggestion is honoured within
// [MinTaskPollInterval, MaxTaskPollInterval]: no busy loop on a server that
// says 0, and no result left unread for longer than a minute on one that
// says an hour. client.DefaultTaskPollInterval's doc states the default
// (go doc shows its value only as this name): change both together.
const (
	DefaultTaskPollInterval = time.Second
	MinTaskPollInterval     = 50 * time.Millisecond
	MaxTaskPollInterval     = time.Minute
)

// TaskPollInterval is the pause before the next tasks/get: the server's
// suggestion in milliseconds (nil: none), bounded.
func TaskPollInterval(suggestedMillis *int64) time.Duration {
	if suggestedMillis == nil || *suggestedMillis <= 0 {
		if suggestedMillis != nil {
			return MinTaskPollInterval
		}
		return DefaultTaskPollInterval
	}
	if *suggestedMillis >= MaxTaskPollInterval.Milliseconds() {
		return MaxTaskPollInterval
	}
	return max(time.Duration(*suggestedMillis)*time.Millisecond, MinTaskPollInterval)
}

// TaskStep is what follows a failed request about a task (tasks/get,
// tasks/result) whose call has already given up on it: the request's own
// retries, and the reconnects it waited for, are over (Retries.After), so
// the failure is one the call path could not fix within the request's
// deadline.
type TaskStep uint8

const (
	// PollAgain: ask about the same task again after the poll interval.
	// The request failed on its way (the server unreachable, its answer
	// lost, a session lost and not yet replaced, the retry budget spent):
	// the task itself is not in question.
	PollAgain TaskStep = iota
	// TaskLost: the server answered that it does not know the task (-32602,
	// whatever its message, such as "task not found" or "task has
	// expired"): it restarted without a
	// durable task store, or the task was bound to a session that expired,
	// or it expired. Its outcome is unknown; it is never sent again.
	TaskLost
	// TaskAnswered: the server's own answer about something else (a
	// JSON-RPC error: the method refused, the task failed): returned as
	// is.
	TaskAnswered
	// TaskCallerGone: the caller's context ended, or the client closed:
	// the call ends (and the task is cancelled if the caller cancelled).
	TaskCallerGone
)

// AfterTaskRequest decides what follows a failed tasks/get or tasks/result.
// answered says the server answered with a JSON-RPC error of code rpcCode;
// callerGone that the caller's context ended or the client closed.
func AfterTaskRequest(answered bool, rpcCode int, callerGone bool) TaskStep {
	switch {
	case callerGone:
		return TaskCallerGone
	case answered && rpcCode == mcp.INVALID_PARAMS:
		// The only parameter is the task id (MCP: "Invalid or nonexistent
		// taskId: -32602").
		return TaskLost
	case answered:
		return TaskAnswered
	}
	return PollAgain
}
