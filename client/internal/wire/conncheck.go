package wire

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrPeerClosed is what writing a request on a connection the server has
// already closed returns, before a byte is written.
var ErrPeerClosed = errors.New("the server had closed the connection before the request was written")

// CheckedDial wraps the default HTTP client's dialer so that a request is
// never written on a pooled connection the server has already closed.
//
// Why: when a server restarts or times out an idle connection, its FIN
// reaches the kernel at once, but net/http notices only when its read loop
// next runs, and a request that takes the connection first is written into
// a dead socket. The server never reads it, yet the client sees EOF after
// writing and cannot tell that from a server that ran the request and then
// died: a non-idempotent call gets ErrOutcomeUnknown for nothing. So before
// the first write of each new request on a connection, the kernel is asked
// (a non-blocking MSG_PEEK, which consumes nothing) whether the peer has
// closed it. If so the write fails with nothing written (ErrPeerClosed). Over
// plain HTTP/1, net/http, which resends a request that wrote nothing on a
// pooled connection, sends it on a new one by itself; over https, where
// net/http is given nothing to resend with (resend.go), and over HTTP/2,
// whose connection fails as a whole, the request fails and the policy sends
// it again at once (IsPeerClosedBeforeWrite). A FIN that arrives after the
// check still races; it is microseconds wide instead of a scheduler's
// wake-up.
//
// Over TLS the check sits beneath the TLS layer, and over HTTP/2 a
// connection's reads and writes interleave (SETTINGS, WINDOW_UPDATE, PING):
// every write that follows a read asks the kernel, which costs a system
// call and is right for each, since a write after the peer has gone is lost
// whatever it carries.
func CheckedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc, ok := conn.(syscall.Conn)
		if !ok {
			return conn, nil
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return conn, nil
		}
		c := &checkedConn{Conn: conn, raw: raw}
		c.peekFn = c.peek // once per connection, not per request
		return c, nil
	}
}

// closingBytes is the most a peer that has finished sending may have left
// unread for the check to take the connection for closed: a TLS 1.3
// close_notify record is 24 bytes, an HTTP/2 GOAWAY in a record of its own
// 39, and the smallest answer to a request (HEADERS of a 202 and a TLS
// record around them) over 30. So 64: what a closing server sends, or one
// tiny answer at most, is taken for closed; a real answer is left to net/http.
const closingBytes = 64

// quietWrite is how long a connection must have gone unwritten for its
// next write to be checked even with nothing read since the last one.
// Over HTTP/1 a request is written in one go, in writes microseconds
// apart, after its connection read the last answer. Over HTTP/2 the last
// write before a pause is often not a request but a frame the client sends
// after the answer (mcp-go cancels a request's context as it finishes
// with the answer, which resets the stream), so the next request follows
// a write, not a read.
const quietWrite = time.Millisecond

// checkedConn is a connection that checks the peer is still there before
// the first write of each request.
type checkedConn struct {
	net.Conn
	raw syscall.RawConn
	// answered: a response was read since the last write, so the next
	// write begins a new request on a connection that sat in the pool.
	answered atomic.Bool
	// For the check, used by one goroutine at a time: net/http writes a
	// connection from one goroutine at a time (HTTP/2 under its write
	// lock).
	peekFn    func(fd uintptr)
	closed    bool
	lastWrite time.Time
	buf       [closingBytes + 1]byte
}

func (c *checkedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered.Store(true)
	}
	return n, err
}

// peerClosed reports whether the peer has closed the connection: a read
// would return end of file or a reset. It neither blocks nor consumes data,
// and runs beside net/http's own reader (Control does not take the read
// lock that reader holds while it waits).
func (c *checkedConn) peerClosed() bool {
	c.closed = false
	_ = c.raw.Control(c.peekFn)
	return c.closed
}

func (c *checkedConn) Write(p []byte) (int, error) {
	now := time.Now()
	quiet := now.Sub(c.lastWrite) > quietWrite
	c.lastWrite = now
	if (c.answered.Swap(false) || quiet) && c.peerClosed() {
		return 0, &net.OpError{Op: "write", Net: "tcp", Addr: c.RemoteAddr(), Err: ErrPeerClosed}
	}
	return c.Conn.Write(p)
}
