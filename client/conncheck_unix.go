//go:build unix

package client

import "syscall"

// peerClosed reports whether the peer has closed the connection: a read
// would return end of file or a reset. It neither blocks nor consumes data,
// and runs beside net/http's own reader (Control does not take the read
// lock that reader holds while it waits).
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err == syscall.ECONNRESET
	})
	return closed
}
