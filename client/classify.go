package client

import (
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

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

// isNetworkError reports whether err is the connection failing, as opposed to
// the peer sending something we could not understand.
func isNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}
