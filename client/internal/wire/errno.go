package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// What a transport error says about a request: whether a connection was
// made (IsDialError), whether the request was written (IsWriteError,
// IsServerClosedIdle, IsCannotRewind, IsPeerClosedBeforeWrite), whether the
// connection failed under it (ConnectionBroke, IsNetworkError), and what an
// HTTP/2 peer's refusal of its stream promises (HTTP2Refusal). Every rule
// that reads a transport error's errno values or net/http's messages is
// here; the policy decides what each means. The connection check reads the
// socket itself, not an error (conncheck_*.go).

// IsDialError reports whether err means no connection could be made, so the
// request was certainly not sent.
func IsDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// IsWriteError reports whether the request failed while it was being
// written: net/http passes the connection's write error on (as a
// *net.OpError with Op "write") when it cannot send the request again
// itself. A body written through the connection's ReadFrom (sendfile or
// splice) fails as an Op "readfrom" that wraps the "write" one.
func IsWriteError(err error) bool {
	if errors.As(err, new(*UnwrittenError)) {
		return true
	}
	for err != nil {
		var op *net.OpError
		if !errors.As(err, &op) {
			return false
		}
		if op.Op == "write" || op.Op == "readfrom" {
			return true
		}
		err = op.Err
	}
	return false
}

// IsServerClosedIdle reports whether net/http failed the request because
// the pooled connection it took had been closed by the server while idle,
// before anything was written on it. net/http retries that itself only for
// requests it considers replayable, never a POST, and has no typed error for
// it: its message is all there is (net/http's errServerClosedIdle).
func IsServerClosedIdle(err error) bool {
	return strings.Contains(err.Error(), "http: server closed idle connection")
}

// ConnectionBroke reports whether err is the connection failing under a
// request: the peer closed or reset it. Not a timeout, which IsNetworkError
// also covers.
func ConnectionBroke(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// IsNetworkError reports whether err is the connection failing (broken, or
// timed out), as opposed to the peer sending something we could not
// understand.
func IsNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || ConnectionBroke(err)
}

// IsCannotRewind reports whether net/http decided to send a request again
// on another connection and could not, for want of GetBody (resend.go).
// For a POST it decides so only when the request never went out: its
// HTTP/2 connection had no stream for it, or was gone before it opened one
// (net/http's errCannotRewind, which it has no type for).
func IsCannotRewind(err error) bool {
	return strings.Contains(err.Error(), "net/http: cannot rewind body after connection loss")
}

// IsPeerClosedBeforeWrite reports whether the connection check (conncheck.go)
// refused to write the request on a connection the server had closed: not
// a byte of it went out.
func IsPeerClosedBeforeWrite(err error) bool { return errors.Is(err, ErrPeerClosed) }

// H2Refusal is what an HTTP/2 peer's refusal of a request's stream says of
// the request.
type H2Refusal int

const (
	// H2NoRefusal: err is no such refusal.
	H2NoRefusal H2Refusal = iota
	// H2GoneAway: a graceful GOAWAY (NO_ERROR) whose last stream id is
	// below the request's stream: the peer promises it did not process it
	// (RFC 9113 6.8), and is closing the connection, not failing.
	H2GoneAway
	// H2Unprocessed: a GOAWAY with an error code that left the stream
	// unprocessed, or a new connection that closed before its first
	// stream could open: not processed, and the peer is failing.
	H2Unprocessed
	// H2Refused: RST_STREAM REFUSED_STREAM, or PROTOCOL_ERROR, from the
	// peer. REFUSED_STREAM promises the stream was not processed by the
	// peer that sent it, which may be a proxy that had already forwarded it.
	H2Refused
)

// The messages of net/http's HTTP/2 transport: it has no exported type for
// these, and with no GetBody (resend.go) it reports the error it would have
// resent after only inside a message of its own, not wrapped.
const (
	h2CannotRetry     = "http2: Transport: cannot retry err ["
	h2GracefulGoAway  = "http2: Transport received Server's graceful shutdown GOAWAY"
	h2GoAwayWithError = "http2: Transport received GOAWAY from server ErrCode:"
	h2NotEstablished  = "http2: client conn could not be established"
	h2RefusedStream   = "REFUSED_STREAM"
)

// h2StreamError has the fields of net/http's unexported http2StreamError,
// whose As method fills any struct of that shape.
type h2StreamError struct {
	StreamID uint32
	Code     uint32
	Cause    error
}

func (e h2StreamError) Error() string {
	return fmt.Sprintf("stream error: stream ID %d; code %d", e.StreamID, e.Code)
}

// h2ErrCodeRefusedStream and h2ErrCodeProtocol are RFC 9113's error codes.
const (
	h2ErrCodeProtocol      = 0x1
	h2ErrCodeRefusedStream = 0x7
)

// HTTP2Refusal reads what an HTTP/2 peer's refusal of the request's stream
// says of it, if err is one.
func HTTP2Refusal(err error) H2Refusal {
	var se h2StreamError
	if errors.As(err, &se) && (se.Code == h2ErrCodeRefusedStream || se.Code == h2ErrCodeProtocol) {
		return H2Refused
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, h2GracefulGoAway):
		// net/http aborts with it only the streams above the GOAWAY's last
		// stream id.
		return H2GoneAway
	case strings.Contains(msg, h2GoAwayWithError), strings.Contains(msg, h2NotEstablished):
		// The first stream of a connection: above the last stream id of
		// a GOAWAY with an error code, or never opened.
		return H2Unprocessed
	case strings.Contains(msg, h2CannotRetry):
		// REFUSED_STREAM, or PROTOCOL_ERROR received from the peer: the
		// only other errors net/http would have resent after.
		return H2Refused
	}
	return H2NoRefusal
}
