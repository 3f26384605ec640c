package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/auth"
)

// class is what a failed attempt means for the call. The failures behind
// each class are listed in FAILURES.md.
type class int

const (
	// classCaller: the caller's context ended. Never retried.
	classCaller class = iota
	// classServer: the server answered the request with an error of its
	// own (a JSON-RPC error, a 4xx, a method it does not have). Returned as
	// is: sending it again would get the same answer.
	classServer
	// classAuth: the server wants authorization (401, 403). The request
	// did not run.
	classAuth
	// classExpired: the server rejected the request before running it
	// because it no longer knows the session (or speaks another protocol
	// version now). Re-initialize once per generation and replay any call.
	classExpired
	// classNotSent: the request provably did not reach the server's
	// handler: no connection could be made, it was not completely written,
	// or the server declined it unread (429, 503). Retry any call.
	classNotSent
	// classUnknown: the request may have run (the connection broke after
	// it was sent, 502, 504). Replay only if safe.
	classUnknown
	// classBroken: the request ran, or may have, and what came back is not
	// usable (500, a 2xx that is not MCP). Never replayed: the same
	// answer would come back.
	classBroken
)

func (c class) String() string {
	return [...]string{"caller", "server error", "authorization", "session expired", "not sent", "outcome unknown", "broken answer"}[c]
}

// verdict is the classification of one failed attempt.
type verdict struct {
	class class
	// corrupt: the session answered another request (guard.go): take it
	// out of service.
	corrupt bool
	// cause: what the failure was, when mcp-go's error does not say (the
	// guard refused the answer); the call reports it instead.
	cause error
	// sent: the request was completely written; it may have run.
	sent bool
	// unreachable: no connection could be made. The session itself may be
	// fine; the server is not answering at all.
	unreachable bool
	// renegotiate: the server rejected our protocol version; allowed once
	// per call, so a server that rejects every version is not a loop.
	renegotiate bool
	// busy: the server declined the request unread (429, 503); it is
	// there, and asked for retryAfter's pause.
	busy       bool
	retryAfter time.Duration
	// idleClosed: the pooled connection had been closed by the server
	// before the request was written on it, which says nothing of the
	// server: send it again at once, on a new connection.
	idleClosed bool
	// staleConnection: the connection failed under a request that went out
	// on a pooled connection: most likely one the far side had already
	// dropped (a restart, an idle timeout), which says nothing of whether
	// the server fails requests.
	staleConnection bool
	// sessionGone: whatever the request's outcome, the server no longer
	// knows the session (a stream's resumption met 404 or 400): open a new
	// one before anything is sent again.
	sessionGone bool
	// rpcAnswer: the server itself answered with a JSON-RPC error, so it
	// is there and knows the session; for a probe, that is proof of life.
	rpcAnswer bool
	// why is what the failure was, for the call's error when the cause's
	// own message would not say it (a stream cut before its answer).
	why string
}

// mayHaveRun reports whether the attempt may have run on the server.
func (v verdict) mayHaveRun() bool {
	switch v.class {
	case classUnknown, classBroken:
		return true
	case classCaller:
		return v.sent
	}
	return false
}

// permanent reports whether no retry can fix the failure; for opening a
// session, where every attempt is safe to repeat, it ends the reconnect
// loop.
func (v verdict) permanent() bool {
	return v.class == classServer || v.class == classAuth || v.class == classBroken
}

// classify decides what a failed attempt means. It is the one place that
// interprets mcp-go's errors; every rule is by errors.Is/As or by what the
// exchange recorded of the HTTP traffic, because mcp-go has no status type.
// s is the session the attempt went out on, nil while opening one.
func classify(err error, s *session, ex *exchange, ctxDone bool) verdict {
	rec := ex.snapshot()
	streamed, cut := ex.stream()
	sessionEra := s != nil && s.sessionEra
	writeFailed := isWriteError(err)
	// Sent, as far as the client can tell: the request reached a
	// connection and writing it did not fail. Not having reached one is
	// believed only of a transport that reports the connections it takes.
	sent := streamed || rec.started && (rec.gotConn || !rec.traced) && !writeFailed
	v := func(c class) verdict { return verdict{class: c, sent: sent} }
	switch {
	case ctxDone && errors.Is(err, auth.ErrUnavailable):
		// The deadline passed while the token layer waited for a token
		// (the authorization server, or the grant store's lock): the
		// request never left.
		return verdict{class: classCaller}
	case ctxDone:
		return v(classCaller)

	case ex.refusal() != nil:
		return refusedVerdict(ex.refusal())

	case streamed && errors.As(err, new(*transport.Error)):
		// The server accepted the request and began answering, and the
		// answer did not come: the stream was cut, or ended without it, and
		// could not be resumed (F28). It may have run. Whatever a
		// resumption met afterwards (a refused connection, a 404) is about
		// the session, not about whether the request ran.
		r := v(classUnknown)
		r.why = "the response stream ended before the answer"
		if cut {
			r.why = "the response stream was cut before the answer"
		}
		r.sessionGone = sessionEra && staleSession(rec, s)
		return r

	case errors.Is(err, auth.ErrUnavailable):
		// The authorization server could not be reached while the call
		// waited for a token: it did not run.
		return verdict{class: classNotSent}

	case errors.As(err, new(*auth.Error)), errors.As(err, new(*auth.InsufficientScopeError)):
		// The token layer could not authorize the request: it did not run.
		return v(classAuth)

	case errors.Is(err, transport.ErrAuthorizationRequired),
		errors.Is(err, transport.ErrOAuthAuthorizationRequired),
		errors.Is(err, transport.ErrUnauthorized),
		rec.status == http.StatusUnauthorized, rec.status == http.StatusForbidden:
		return v(classAuth)

	case errors.Is(err, transport.ErrSessionTerminated):
		// 404. Only the session era has sessions to lose; on 2026-07-28 a
		// 404 means the method or the endpoint does not exist.
		if sessionEra {
			return v(classExpired)
		}
		return v(classServer)

	case sessionEra && staleSession(rec, s):
		// The TypeScript SDK's servers, and the many copied from them,
		// answer an unknown session with 400 and a JSON-RPC error (F26).
		return v(classExpired)

	case errors.Is(err, transport.ErrLegacySSEServer):
		// initialize answered 4xx: not a Streamable HTTP endpoint.
		return v(classServer)

	case mcp.IsUnsupportedProtocolVersion(err):
		// The server was upgraded or rolled back under us. It rejected the
		// request unread, so any call may be replayed after one
		// re-negotiation.
		r := v(classExpired)
		r.renegotiate = true
		return r

	case rec.status == http.StatusTooManyRequests, rec.status == http.StatusServiceUnavailable:
		// Both mean the server did not process the request (RFC 9110
		// 15.6.4, RFC 6585 4).
		r := v(classNotSent)
		r.busy, r.retryAfter = true, rec.retryAfter
		return r

	case rec.status == http.StatusBadGateway, rec.status == http.StatusGatewayTimeout:
		// A proxy lost the backend's answer; the backend may have run it.
		return v(classUnknown)

	case rec.status >= 500:
		return v(classBroken)

	case rec.status >= 400:
		return v(classServer)

	case !errors.As(err, new(*transport.Error)):
		// Not a transport failure: the server answered with a JSON-RPC
		// error.
		r := v(classServer)
		r.rpcAnswer = true
		return r

	case isDialError(err):
		r := v(classNotSent)
		r.unreachable = true
		return r

	case rec.status >= 200 && rec.status < 300 && !isNetworkError(err):
		// An answer came and was not MCP: an HTML page, garbage JSON, an
		// unexpected content type. A retry gets the same answer.
		return v(classBroken)

	case isServerClosedIdle(err):
		r := v(classNotSent)
		r.idleClosed = true
		return r

	case writeFailed && rec.status == 0:
		// Writing the request failed, so no server read it whole: a
		// connection that broke (or that the peer had closed) before the
		// last byte went out.
		return v(classNotSent)
	}
	// Reset, EOF, a timeout or a stream broken after the request was written.
	r := v(classUnknown)
	r.staleConnection = rec.reused && rec.status == 0 && isNetworkError(err)
	return r
}

// staleSession reports whether the last request's answer says the server no
// longer knows the session it carried (F26): a 404, or a 400 with a
// JSON-RPC error, to a request with a session id on a session the server has
// accepted before. A 400 on a session that has served nothing yet is the
// server's answer to the request, as is an error that can only be about the
// request itself.
func staleSession(rec record, s *session) bool {
	if !rec.withSession || s == nil || !s.served.Load() {
		return false
	}
	switch rec.status {
	case http.StatusNotFound:
		return true
	case http.StatusBadRequest:
		return rec.rpcError && !requestFault(rec.rpcCode)
	}
	return false
}

// requestFault reports whether a JSON-RPC error code is about the request
// as sent (it would be refused by any session): not a sign of a lost one.
func requestFault(code int) bool {
	switch code {
	case mcp.PARSE_ERROR, mcp.METHOD_NOT_FOUND, mcp.INVALID_PARAMS:
		return true
	}
	return false
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

// isWriteError reports whether the request failed while it was being
// written: net/http passes the connection's write error on (as a
// *net.OpError with Op "write") when it cannot send the request again
// itself.
func isWriteError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write"
}

// answeredByServer reports whether err is the server's own answer to a
// request (a JSON-RPC error, a method it does not have), which sending
// again would only repeat, as opposed to the request failing on its way.
func answeredByServer(err error, s *session) bool {
	return classify(err, s, nil, false).class == classServer
}

// isServerClosedIdle reports whether net/http failed the request because
// the pooled connection it took had been closed by the server while idle,
// before anything was written on it. net/http retries that itself only for
// requests it considers replayable, never a POST, and has no typed error for
// it: its message is all there is (net/http's errServerClosedIdle).
func isServerClosedIdle(err error) bool {
	return strings.Contains(err.Error(), "http: server closed idle connection")
}

// isNetworkError reports whether err is the connection failing, as opposed to
// the peer sending something we could not understand.
func isNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// retries is one call's account of its failed attempts. after decides, once
// per class of failure and in this one place, what the call does next.
type retries struct {
	method     string
	tool       string                 // the tool of a tools/call, for the log
	max        int                    // WithMaxAttempts
	poolSize   int                    // WithPoolSize
	newBackOff func() backoff.BackOff // WithBackOff

	// attempts counts sends that may have reached the server's handler
	// (outcome unknown); replays after a re-initialization have their own
	// count, so that a call spanning two restarts is not failed for it,
	// while a server that answers 404 to everything still cannot hold a
	// call in a loop. Sends that provably did not run are bounded by the
	// deadline and the retry budget, not counted.
	attempts, replays int
	sends             int // every send, for the error message
	renegotiated      bool
	mayHaveRun        bool            // some attempt may have run on the server
	revalidate        bool            // probe the session before the next send
	ctxErr            error           // the caller's context's error, once it ended
	staleRetried      bool            // the one free retry after a stale pooled connection is spent
	pauses            backoff.BackOff // made on the first retry that must wait
}

// action is what a call does after a failed attempt.
type action struct {
	err       error      // stop, and return this
	discard   *lostError // take the session out of service first, for this cause
	reconnect bool       // not a retry: wait in Acquire for the reconnect loop
	closeIdle bool       // drop the HTTP client's idle connections
	budget    bool       // the retry is paid from the shared retry budget
	replay    bool       // the retry is a replay on a new session
	pause     time.Duration
	refused   bool // a replay refused because the call is not safe to repeat
}

// after decides what follows a failed attempt. safe is asked only when the
// outcome is unknown; it may list the server's tools to answer.
func (r *retries) after(v verdict, err error, safe func() bool, deadline time.Time) action {
	r.sends++
	r.mayHaveRun = r.mayHaveRun || v.mayHaveRun()
	switch v.class {
	case classCaller:
		// The caller's context's own error goes in the chain: what mcp-go
		// returns when a context ends is not always built on it (a stream
		// cut at the deadline reads as "unexpected nil response").
		why := "cancelled"
		if errors.Is(r.ctxErr, context.DeadlineExceeded) {
			why = "no answer before the deadline"
			if !r.mayHaveRun {
				why = "the deadline passed before the request was sent"
			}
		}
		if r.ctxErr == nil {
			return action{err: r.fail(why, err)}
		}
		return action{err: r.fail(why, err, r.ctxErr)}

	case classServer:
		return action{err: err}

	case classAuth:
		return action{err: authFailure(err)}

	case classExpired:
		// Every goroutine that used this lease's generation sees this; the
		// first Discard starts the one re-initialization, the others are
		// no-ops and wait for it in Acquire. Not paid from the budget: the
		// generation gate already makes it one re-initialization for every
		// caller.
		if v.renegotiate {
			if r.renegotiated {
				return action{err: err}
			}
			r.renegotiated = true
		}
		// One restart expires every session of a pool, and a call may meet
		// each of them once before it meets a new one.
		a := action{discard: &lostError{kind: lossExpired, err: err}, replay: true}
		if r.replays++; r.replays > r.max+r.poolSize-1 {
			a.err = r.fail(fmt.Sprintf("the session was lost %d times in a row", r.replays), err)
		}
		return a

	case classNotSent:
		if v.unreachable {
			// Nothing reached the server. Hand the waiting to the reconnect
			// loop, which tries on the backoff schedule for every caller at
			// once; it is not a retry of the call.
			return action{discard: &lostError{kind: lossUnreachable, err: err}, reconnect: true}
		}
		if v.idleClosed {
			// Not paid for with a pause: the other idle connections went
			// with it (a restart), so drop them all and send at once.
			return action{closeIdle: true, budget: true}
		}
		// Declined unread (429, 503) or not written: wait as the server
		// asks, or by the backoff, for as long as the deadline allows.
		a := action{pause: max(v.retryAfter, r.nextPause()), budget: true}
		if !deadline.IsZero() && time.Until(deadline) < a.pause {
			a.err = r.fail(fmt.Sprintf("the deadline leaves no time for the %v pause before trying again", a.pause.Round(time.Millisecond)), err, context.DeadlineExceeded)
		}
		return a

	case classUnknown:
		a := action{closeIdle: true}
		switch {
		case v.corrupt:
			a.discard = &lostError{kind: lossCorrupt, err: err}
		case v.sessionGone:
			a.discard = &lostError{kind: lossExpired, err: err}
		}
		if !safe() {
			a.refused = true
			a.err = r.fail(join(v.why, "not safe to repeat"), err)
			return a
		}
		if v.staleConnection && !r.staleRetried {
			// A pooled connection that died says nothing of the server; a
			// restart can fail several at once. Sent again at once, on a
			// new connection; paid from the budget, but not counted
			// against the call's attempts. Once per call: a server that
			// drops every answer must not double the attempts.
			r.staleRetried = true
			a.budget = true
			return a
		}
		if r.attempts++; r.attempts >= r.max {
			a.err = r.fail(v.why, err)
			return a
		}
		// Before sending again, ask the session whether the server
		// answers: a server that is down then fails the probe, the session
		// goes to the reconnect loop, and the call waits for it on the
		// backoff schedule instead of spending its attempts in
		// milliseconds.
		r.revalidate = true
		a.budget = true
		return a

	case classBroken:
		return action{err: r.fail("the answer was not usable", err)}
	}
	return action{err: err}
}

// join joins two parts of an error's why.
func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// fail is the call's error: ErrOutcomeUnknown if some attempt may have run,
// else ErrUnavailable.
func (r *retries) fail(why string, cause error, also ...error) error {
	kind := ErrUnavailable
	if r.mayHaveRun {
		kind = ErrOutcomeUnknown
	}
	return &callError{kind: kind, method: r.method, why: why, sends: r.sends, also: also, cause: cause}
}

func (r *retries) nextPause() time.Duration {
	if r.pauses == nil {
		r.pauses = r.newBackOff()
	}
	return r.pauses.NextBackOff()
}
