package wire

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// The one list of what a transport error says about a request: whether it
// was sent, and whether the connection failed under it. Every rule that
// reads errno values or net/http's messages is here.

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
