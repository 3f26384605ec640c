//go:build unix

package wire

import "syscall"

// peek asks the kernel, without blocking or consuming, whether a read of fd
// would find the peer gone: end of file or a reset at once, or, on a
// connection the peer has finished sending on, nothing but a few bytes
// before the end. Those are what a TLS server sends as it closes (its
// close_notify alert, and an HTTP/2 GOAWAY), which net/http's reader has
// not yet read; a request written behind them is never read. More than a
// few bytes may be an answer still to be read (HTTP/2 carries several on
// one connection): the connection is left to net/http.
func (c *checkedConn) peek(fd uintptr) {
	n, err := recvPeek(fd, c.buf[:])
	c.closed = n == 0 && err == nil || err == syscall.ECONNRESET ||
		n > 0 && n < len(c.buf) && peerFinished(fd)
}
