package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// class is what a failed attempt means for the call; see design/failures.md.
type class int

const (
	// classFatal: retrying cannot help. Returned as is.
	classFatal class = iota
	// classCaller: the caller's context ended. Returned as is, never retried.
	classCaller
	// classSessionExpired: the server rejected the request before running
	// it because it no longer knows the session (or speaks another protocol
	// version now). Re-initialize once per generation and replay.
	classSessionExpired
	// classNotSent: the request did not reach the server, or the server
	// declined it without running it (429, 503). Back off and retry.
	classNotSent
	// classOutcomeUnknown: the request may have run. Retry only if safe.
	classOutcomeUnknown
)

func (c class) String() string {
	return [...]string{"fatal", "caller", "session expired", "not sent", "outcome unknown"}[c]
}

// verdict is the classification of one failed attempt.
type verdict struct {
	class class
	// unreachable: no connection could be made. The session itself may be
	// fine; the server is not answering at all.
	unreachable bool
	// renegotiate: the server rejected our protocol version; allowed once
	// per call, so a server that rejects every version is not a loop.
	renegotiate bool
	// retryAfter: the server asked for this pause (429, 503).
	retryAfter time.Duration
	// staleConnection: the connection failed under a request that went out
	// on a pooled connection: most likely one the far side had already
	// dropped (a restart, an idle timeout), which says nothing of whether
	// the server fails requests.
	staleConnection bool
}

// classify decides what a failed attempt means. It is the one place that
// interprets mcp-go's errors; every rule is by errors.Is/As or by the HTTP
// status the exchange recorded, because mcp-go has no status type.
func classify(err error, sessionEra bool, ex *exchange, ctxDone bool) verdict {
	status, retryAfter, reused := ex.snapshot()
	switch {
	case ctxDone:
		return verdict{class: classCaller}

	case errors.Is(err, transport.ErrAuthorizationRequired),
		errors.Is(err, transport.ErrOAuthAuthorizationRequired),
		errors.Is(err, transport.ErrUnauthorized),
		status == http.StatusUnauthorized, status == http.StatusForbidden:
		return verdict{class: classFatal}

	case errors.Is(err, transport.ErrSessionTerminated):
		// 404. Only the session era has sessions to lose; on 2026-07-28 a
		// 404 means the method or the endpoint does not exist.
		if sessionEra {
			return verdict{class: classSessionExpired}
		}
		return verdict{class: classFatal}

	case errors.Is(err, transport.ErrLegacySSEServer):
		// initialize answered 4xx: not a Streamable HTTP endpoint.
		return verdict{class: classFatal}

	case mcp.IsUnsupportedProtocolVersion(err):
		// The server was upgraded or rolled back under us. The server
		// rejected the request unread, so any call may be replayed after one
		// re-negotiation.
		return verdict{class: classSessionExpired, renegotiate: true}

	case status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable:
		// Both mean the server did not process the request (RFC 9110 15.6.4,
		// RFC 6585 4).
		return verdict{class: classNotSent, retryAfter: retryAfter}

	case status == http.StatusBadGateway, status == http.StatusGatewayTimeout:
		// A proxy lost the backend's answer; the backend may have run it.
		return verdict{class: classOutcomeUnknown}

	case status >= 400:
		return verdict{class: classFatal}

	case !errors.As(err, new(*transport.Error)):
		// Not a transport failure: the server answered with a JSON-RPC error,
		// or with a result mcp-go could not decode.
		return verdict{class: classFatal}

	case isDialError(err):
		return verdict{class: classNotSent, unreachable: true}

	case status >= 200 && status < 300 && !isNetworkError(err):
		// An answer came and was not MCP: an HTML page, garbage JSON, an
		// unexpected content type. A retry gets the same answer.
		return verdict{class: classFatal}
	}
	// Reset, EOF, a timeout or a stream broken after the request was written.
	return verdict{class: classOutcomeUnknown, staleConnection: reused && status == 0 && isNetworkError(err)}
}

// answeredByServer reports whether err is the server's own answer to a
// request (a JSON-RPC error, a method it does not have), which sending
// again would only repeat, as opposed to the request failing on its way.
func answeredByServer(err error, sessionEra bool) bool {
	return classify(err, sessionEra, nil, false).class == classFatal
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
	max        int                    // WithMaxAttempts
	newBackOff func() backoff.BackOff // WithBackOff

	// attempt counts sends that may be retried (outcome unknown, 429, 503);
	// replays after a re-initialization have their own count, so that a
	// call spanning two restarts is not failed for it, while a server that
	// answers 404 to everything still cannot hold a call in a loop.
	attempt      int
	replays      int
	renegotiated bool
	pauses       backoff.BackOff // made on the first retry that must wait
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
}

func (r *retries) after(method string, v verdict, err error, safe bool) action {
	if r.attempt == 0 {
		r.attempt = 1
	}
	switch v.class {
	case classCaller:
		if errors.Is(err, context.DeadlineExceeded) {
			return action{err: fmt.Errorf("resilientmcp: %s: no answer before the deadline; the request may have run on the server: %w", method, err)}
		}
		return action{err: err}

	case classFatal:
		return action{err: err}

	case classSessionExpired:
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
		a := action{discard: &lostError{kind: lossExpired, err: err}, replay: true}
		if r.replays++; r.replays > r.max {
			a.err = fmt.Errorf("resilientmcp: %s: session lost %d times in a row: %w", method, r.replays, err)
		}
		return a

	case classNotSent:
		if v.unreachable {
			// Nothing reached the server. Hand the waiting to the reconnect
			// loop, which tries on the backoff schedule for every caller at
			// once; it is not a retry of the call.
			return action{discard: &lostError{kind: lossUnreachable, err: err}, reconnect: true}
		}
		return r.count(method, err, action{pause: max(v.retryAfter, r.nextPause())})

	case classOutcomeUnknown:
		a := action{closeIdle: true}
		if !safe {
			a.err = fmt.Errorf("%w: %s: %w", ErrOutcomeUnknown, method, err)
			return a
		}
		// The first retry goes at once: the usual cause is a pooled
		// connection the server had closed, which the HTTP client has now
		// dropped. A second failure in a row waits.
		if r.pauses != nil {
			a.pause = r.pauses.NextBackOff()
		} else {
			r.pauses = r.newBackOff()
		}
		if v.staleConnection {
			// A pooled connection that died says nothing of the server; a
			// restart can fail several at once. Paid from the budget, but
			// not counted against the call's attempts.
			a.budget = true
			return a
		}
		return r.count(method, err, a)
	}
	return action{err: err}
}

// count charges a retry to the call's attempts and to the budget.
func (r *retries) count(method string, err error, a action) action {
	if r.attempt >= r.max {
		a.err = fmt.Errorf("resilientmcp: %s: giving up after %d attempts: %w", method, r.attempt, err)
		return a
	}
	r.attempt++
	a.budget = true
	return a
}

func (r *retries) nextPause() time.Duration {
	if r.pauses == nil {
		r.pauses = r.newBackOff()
	}
	return r.pauses.NextBackOff()
}
