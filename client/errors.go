package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client/internal/affinity"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// Every error a call returns answers one question: may the request have run
// on the server? It is exactly one of:
//
//   - ErrOutcomeUnknown: it may have run, and was not sent again;
//   - ErrUnavailable: it did not run;
//   - ErrAuthorizationRequired: the server wants authorization; it did not run;
//   - *InsufficientScopeError (errors.As): the server wants more scope than
//     the client could get; it did not run;
//   - the server's own answer (a JSON-RPC error, mcp-go's error as is);
//   - ErrClosed: the client was closed (also ErrOutcomeUnknown if the
//     request had been sent).
//
// ErrResponseTooLarge comes with ErrOutcomeUnknown, ErrNoAffinity with
// ErrUnavailable or ErrOutcomeUnknown, *TaskLostError with ErrOutcomeUnknown.
//
// No error is both ErrOutcomeUnknown and ErrUnavailable. Each also wraps the
// failure behind it, and context.DeadlineExceeded or context.Canceled when
// the caller's context ended. A tool's own failure is a CallToolResult with
// IsError, never an error.
var (
	// ErrClosed is returned by every call made after Close, and by calls
	// that Close interrupted.
	ErrClosed = errors.New("resilientmcp: client closed")

	// ErrOutcomeUnknown means the request may have reached the server and
	// run there, and was not sent again: it is not safe to repeat (a tool
	// not annotated read-only or idempotent), or the attempts or the
	// deadline ran out after it was sent, or the answer was unusable. Check
	// on the server before trying again.
	ErrOutcomeUnknown = errors.New("resilientmcp: outcome unknown: the request may have run on the server")

	// ErrUnavailable means the request did not run on the server: no
	// session could be had before the deadline, the server declined it
	// unread (503, 429), or the retry budget was spent on failures that
	// never reached it. Trying again later is safe.
	ErrUnavailable = errors.New("resilientmcp: unavailable: the request did not run on the server")

	// ErrAuthorizationRequired means the server refused the request for
	// want of authorization (401, 403); it did not run. The error is an
	// *AuthorizationRequiredError that says why.
	ErrAuthorizationRequired = errors.New("resilientmcp: authorization required")

	// ErrResponseTooLarge means an answer was larger than
	// WithMaxResponseBytes allows: a response body, or one event of a
	// response stream. It always comes with ErrOutcomeUnknown: the request
	// ran, or may have, and its answer was refused at the limit, unread
	// beyond it. It is never sent again, since the same answer would come
	// back. The connection it came on is dropped; the session is kept.
	ErrResponseTooLarge = wire.ErrResponseTooLarge

	// ErrNoAffinity means the client stopped opening sessions because the
	// deployment does not keep a session on one replica: a session-era
	// server behind a load balancer without affinity (round robin, or an
	// affinity the client cannot honour), where each session expires on
	// its next request, since another replica answers it. The client
	// found that the last sessions expired one after another within
	// their first requests, rather than re-initializing in a loop
	// (F39). The deployment needs sticky sessions, by the Mcp-Session-Id
	// header or by cookie; or the stateless era (2026-07-28), which has
	// no sessions.
	//
	// It always comes with ErrUnavailable: the call was not sent (an
	// expired session's requests are refused before they run, and the
	// call waited for a session that was not opened); or, if an earlier
	// attempt of the call may have run, with ErrOutcomeUnknown. Calls fail
	// at once with it for a few seconds, then one session is tried again.
	ErrNoAffinity = affinity.ErrNoAffinity
)

// AuthorizationRequiredError is the error of a call the server refused for
// want of authorization. It matches ErrAuthorizationRequired with errors.Is
// and wraps the server's answer. Reason is one of a documented set:
// "no_token" (the server asked for authorization and the client has none to
// give), and those of the authorization flow.
//
// Like every error the client returns, it is immutable and safe to share
// between goroutines.
type AuthorizationRequiredError struct {
	// Reason says why no authorization could be had: "no_token" when the
	// server asked for authorization and the client was given none.
	Reason string
	cause  error
}

func authorizationRequired(reason string, cause error) error {
	return &AuthorizationRequiredError{Reason: reason, cause: cause}
}

// Error says that authorization is required, why, and what the server
// answered.
func (e *AuthorizationRequiredError) Error() string {
	msg := "resilientmcp: authorization required (" + e.Reason + ")"
	if e.cause != nil {
		msg += ": " + wire.Describe(e.cause)
	}
	return msg
}

// Is makes errors.Is(err, ErrAuthorizationRequired) true.
func (e *AuthorizationRequiredError) Is(target error) bool { return target == ErrAuthorizationRequired }

// Unwrap returns the server's answer, mcp-go's error.
func (e *AuthorizationRequiredError) Unwrap() error { return e.cause }

// callError is a failed call's error when the server did not answer it:
// ErrOutcomeUnknown or ErrUnavailable (or ErrClosed), why, after how many
// sends, and the last cause.
type callError struct {
	kind   error // ErrOutcomeUnknown, ErrUnavailable, or nil with closed
	closed bool  // also ErrClosed: Close interrupted the call
	// answered: the server answered the last attempt with a JSON-RPC
	// error (policy.Retries.Answered): a listing is not served stale.
	answered bool
	method   string
	why      string
	sends    int
	also     []error // further causes to match, such as the context's error
	cause    error
}

func (e *callError) Error() string {
	var b strings.Builder
	b.WriteString("resilientmcp: ")
	b.WriteString(e.method)
	b.WriteString(": ")
	if e.closed {
		b.WriteString("client closed")
		if e.kind == ErrOutcomeUnknown {
			b.WriteString(" after the request was sent; it may have run on the server")
		}
	} else if e.kind == ErrOutcomeUnknown {
		b.WriteString("outcome unknown, the request may have run on the server")
	} else {
		b.WriteString("unavailable, the request did not run on the server")
	}
	if e.why != "" {
		b.WriteString(": ")
		b.WriteString(e.why)
	}
	if e.sends > 0 {
		fmt.Fprintf(&b, " (%d %s)", e.sends, plural(e.sends, "attempt", "attempts"))
	}
	if e.cause != nil {
		b.WriteString(": ")
		b.WriteString(wire.Describe(e.cause))
	}
	return b.String()
}

func (e *callError) Unwrap() []error {
	errs := make([]error, 0, 3+len(e.also))
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.closed {
		errs = append(errs, ErrClosed)
	}
	errs = append(errs, e.also...)
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// authFailure is the caller's error for a request refused for want of
// authorization: *InsufficientScopeError as is, else ErrAuthorizationRequired.
func authFailure(err error) error {
	if ise := new(InsufficientScopeError); errors.As(err, &ise) {
		return ise
	}
	return authorizationRequired(authReason(err), err)
}

// authReason is the Reason of an authorization failure: the token layer's,
// or no_token for a server that wants authorization the client cannot give.
func authReason(err error) string {
	var ae *auth.Error
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return auth.ReasonNoToken
}
