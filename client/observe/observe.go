// Package observe is the vocabulary of a ResilientClient's observers, as
// grpc-go's stats package is of its stats.Handler: the Observer interface;
// what it is told of each call (CallInfo, AttemptInfo, AttemptEnd, CallEnd,
// and the reasons and waits they name); and the Event union, what happens
// outside calls (a session opened, lost or closed, a session's State, a
// probe, a failed dial, a token renewal, the circuit breaker, a stdio
// server's process started or exited). It imports nothing of the client, so
// that an observer need not: otelmcp's is one.
//
// An observer is given to a client with client.WithObserver. Package client
// keeps aliases of the names of its own API only (client.Observer is
// Observer, client.State is State); the rest is named here, as grpc users
// name stats.
//
// # What an observer is told, and when
//
// Of each call, on the caller's goroutine and in order: StartCall, then for
// each attempt to send it StartAttempt and EndAttempt, then EndCall; the
// contexts StartCall and StartAttempt return carry the observer's state (a
// span) through the call, and the attempt's requests go out under its
// context. Of the rest, HandleEvent, from the client's own goroutines;
// SessionState and BreakerState in order, on the goroutine that delivers
// client.WithStateHandler's transitions. Observer's doc has the details.
//
// # Cost
//
// Without an observer the call path neither allocates nor calls anything
// for observation. Every value an observer is given is a plain value. An
// observer's methods must return quickly and must not call the client. A
// MetaPropagator makes the client rewrite a request only when it has an
// entry to add.
//
// # Concurrency
//
// An Observer must be safe for concurrent use: the client calls it from
// every goroutine that makes a call, and HandleEvent from goroutines of its
// own. With several observers, each is told everything, in the order they
// were given.
package observe

import (
	"context"
	"fmt"
	"time"
)

// Observer is told what the client does, in the spirit of grpc-go's
// stats.Handler: of each call (it starts; every attempt to send it, with why
// it was made, on which session, and what the call waited for before it;
// how each attempt ended; how the call ended, with the class of its error),
// and, through HandleEvent, of what happens outside calls (a session opened,
// lost with its cause, or closed; a probe; a failed reconnect; a token
// renewal; a session's change of state).
//
// A call's methods are called in order on the caller's goroutine:
// StartCall, then for each attempt StartAttempt and EndAttempt, then
// EndCall. StartCall and StartAttempt may return a context derived from
// theirs, to carry what the observer follows the call with (a span): every
// later method of the call gets a context derived from StartCall's, and
// EndAttempt gets StartAttempt's. The attempt's requests go out under its
// context, so an instrumented http.Client nests its spans under it.
//
// An attempt that resends a request the server refused with 401 or 403
// (a new token) begins in the HTTP layer, beneath mcp-go: its StartAttempt
// gets the refused request's context, derived from the previous attempt's.
// An observer that keeps an attempt's state (a span) in the context finds
// the previous attempt's there, and must not take it for the new one's
// parent.
//
// An Observer must be safe for concurrent use: the client calls it from
// every goroutine that makes a call, and HandleEvent from goroutines of its
// own. Its methods must return quickly and must not call the client.
type Observer interface {
	// StartCall is told that a call begins. It returns the context the
	// call runs under: ctx, or one derived from it.
	StartCall(ctx context.Context, call CallInfo) context.Context
	// StartAttempt is told that the call is about to be sent, the first
	// time or again. It returns the context the attempt's requests go out
	// under: ctx, or one derived from it.
	StartAttempt(ctx context.Context, attempt AttemptInfo) context.Context
	// EndAttempt is told how the attempt ended. ctx is the one
	// StartAttempt returned, or with several observers the last one's,
	// derived from it.
	EndAttempt(ctx context.Context, end AttemptEnd)
	// EndCall is told how the call ended. ctx is the one StartCall
	// returned, or with several observers the last one's, derived from
	// it.
	EndCall(ctx context.Context, end CallEnd)
	// HandleEvent is told of what happens outside calls to the client
	// whose endpoint is server: one of SessionOpened, SessionLost,
	// SessionClosed, SessionState, Probed, DialFailed, TokenRenewed,
	// BreakerState, and of a stdio server, ProcessStarted and
	// ProcessExited.
	HandleEvent(server Server, ev Event)
}

// MetaPropagator is an Observer that also carries context to the server in
// the params._meta of every JSON-RPC request and notification an attempt
// sends (SEP-414: traceparent, tracestate, baggage), so that the server's
// spans join the caller's trace. InjectMeta is called for each, with the
// context the request goes out under (the attempt's), and returns the
// entries to add, nil if none; the client does not keep the map. An entry
// the request's _meta already has is kept as the request has it. When no
// MetaPropagator returns anything, the request goes out untouched.
//
// A request is rewritten only if some entry is to be added: that costs a
// pass over its JSON and a copy of its body. Most requests of a program
// that traces nothing have nothing to add: InjectMeta should find that out
// without allocating.
type MetaPropagator interface {
	Observer
	InjectMeta(ctx context.Context) map[string]string
}

// CallInfo is what a call is: StartCall's argument. A plain value.
type CallInfo struct {
	// Method is the MCP method: "tools/call", "resources/read",
	// "initialize" (client.ResilientClient.Initialize, which waits for the
	// session it opens)...
	Method string
	// Tool is the tool of a tools/call, Prompt the prompt of a prompts/get,
	// ResourceURI the resource of a resources/read, resources/subscribe or
	// resources/unsubscribe; "" for other methods.
	Tool, Prompt, ResourceURI string
	// Server is the client's endpoint.
	Server Server
}

// Server is a client's endpoint, as the semantic conventions' server.address,
// server.port and network.transport have it: over HTTP, the URL's host,
// its port or the scheme's, and "tcp"; over stdio (client.NewStdio), the
// command's base name, no port, and "pipe". A plain value.
type Server struct {
	// Name is the server's name in the agent's config (client.WithServerName;
	// package fleet sets it), "" if it was not given.
	Name      string
	Address   string
	Port      int    // 0 over stdio
	Transport string // "tcp" (HTTP) or "pipe" (stdio)
}

// AttemptInfo is what an attempt is: StartAttempt's argument. A plain value.
type AttemptInfo struct {
	// Number counts the call's attempts, from 1. It counts every send:
	// also those that provably did not run, and the resend after a 401
	// that the token layer makes beneath mcp-go.
	Number int
	// Reason is why the attempt is made: what the one before met.
	Reason AttemptReason
	// Session is the session's Mcp-Session-Id, "" in the stateless era
	// (2026-07-28), which has no sessions on the wire.
	Session string
	// ProtocolVersion is the version the session negotiated.
	ProtocolVersion string
	// Waited is what the call waited for before this attempt could be
	// sent, since WaitStart: a new session after a re-initialization or a
	// redial. WaitNone when it did not wait for one.
	Waited    WaitKind
	WaitStart time.Time
}

// AttemptReason is why an attempt is made.
type AttemptReason int

// The reasons for an attempt.
const (
	// AttemptFirst: the call's first send.
	AttemptFirst AttemptReason = iota
	// AttemptNotSent: the previous attempt provably did not reach the
	// server's handler (refused, declined with 503 or 429, not written, a
	// pooled connection found closed): sent again, whatever the call.
	AttemptNotSent
	// AttemptOutcomeUnknown: the previous attempt may have run and its
	// answer was lost; the call is safe to repeat, so it is replayed.
	AttemptOutcomeUnknown
	// AttemptSessionExpired: the previous attempt's session expired (404,
	// or 400 to a session it had served), or the server no longer speaks
	// its protocol version; it did not run. Resent on a new session, after
	// the re-initialization.
	AttemptSessionExpired
	// AttemptUnauthorized: the server refused the previous attempt's
	// token (401) or its scope (403 insufficient_scope); it did not run.
	// Sent again with a new token.
	AttemptUnauthorized
)

// String is the reason as a span attribute or a metric label has it:
// "first", "not_sent", "outcome_unknown", "session_expired",
// "unauthorized".
func (r AttemptReason) String() string {
	switch r {
	case AttemptFirst:
		return "first"
	case AttemptNotSent:
		return "not_sent"
	case AttemptOutcomeUnknown:
		return "outcome_unknown"
	case AttemptSessionExpired:
		return "session_expired"
	case AttemptUnauthorized:
		return "unauthorized"
	}
	return fmt.Sprintf("AttemptReason(%d)", int(r))
}

// WaitKind is what a call waited for between two attempts.
type WaitKind int

// What a call waits for.
const (
	WaitNone WaitKind = iota
	// WaitReinitialize: the session expired; the call waited for the new
	// one (one re-initialization for every call that met it).
	WaitReinitialize
	// WaitRedial: the session was lost otherwise (its connection broke or
	// hung, it failed a probe, it answered another request, or the server
	// could not be reached); the call waited for the reconnect loop to put
	// a session back in service.
	WaitRedial
)

// String is "none", "reinitialize" or "redial".
func (w WaitKind) String() string {
	switch w {
	case WaitNone:
		return "none"
	case WaitReinitialize:
		return "reinitialize"
	case WaitRedial:
		return "redial"
	}
	return fmt.Sprintf("WaitKind(%d)", int(w))
}

// AttemptEnd is how an attempt ended: EndAttempt's argument. A plain value.
type AttemptEnd struct {
	// Err is what the attempt met; nil if the server answered it with a
	// result. A JSON-RPC error is the server's answer, and the call's.
	Err error
	// ErrorType is Err's class, "" when Err is nil: what the client
	// decided the failure was, the same for every observer and for the
	// client's own handling of it. The JSON-RPC error code of the
	// server's answer ("-32602"), or "server_error" (the server's own
	// answer without a code mcp-go keeps: a 4xx, a 404 in the 2026-07-28
	// era), "session_expired" (the server no longer knows the session, or
	// changed protocol version), "unauthorized", "insufficient_scope",
	// "wrong_answer" (an answer carrying another request's id),
	// "response_too_large", "deadline_exceeded", "canceled",
	// "server_busy" (429, 503), "connection_error" (no connection, or it
	// failed under the request, or a proxy's did: 502, 504),
	// "broken_answer" (a 500, an answer that is not MCP).
	ErrorType string
	// RequestID is the JSON-RPC id of the attempt's last request, when
	// a MetaPropagator had it carry context (its body is read then); ""
	// otherwise.
	RequestID string
	// NetworkProtocolVersion is the HTTP version of the attempt's last
	// response ("1.1", "2"), "" if none came, or if no observer of the
	// client is a MetaPropagator (only they put a layer under the HTTP
	// client, and only then do calls pay for it).
	NetworkProtocolVersion string
}

// CallEnd is how a call ended: EndCall's argument. A plain value.
type CallEnd struct {
	// Err is the error the call returns to its caller.
	Err error
	// ErrorType is the class of the call's failure, "" if it succeeded:
	// "tool_error" for a tools/call whose result has IsError; the
	// library's class of the error returned: "outcome_unknown",
	// "unavailable", "authorization_required", "insufficient_scope",
	// "closed"; for the server's answer, returned as is, the ErrorType of
	// the attempt that met it (the JSON-RPC code, or "server_error"); and
	// "_OTHER" for an answer no attempt met (the server refused to open a
	// session) without a JSON-RPC code mcp-go keeps.
	ErrorType string
	// RPCCode is the JSON-RPC error code of the server's answer when
	// ErrorType is one; 0 otherwise.
	RPCCode int
	// Attempts is how many times the call was sent (AttemptInfo.Number of
	// the last): more than 1 if it was retried.
	Attempts int
	// ReplayRefused: an attempt's outcome was unknown and the call was not
	// sent again because it is not safe to repeat (the error is then
	// client.ErrOutcomeUnknown).
	ReplayRefused bool
	// FromCache: a listing or a read answered from the client's cache:
	// within the ttlMs the server gave (Attempts is 0: nothing was sent),
	// or, with Stale, in place of the error its attempts met, with the
	// last good answer (client.WithMaxStale). Err is nil.
	FromCache, Stale bool
}
