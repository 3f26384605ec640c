//go:build unix

package wire

import "syscall"

// peek asks the kernel, without blocking or consuming, whether a read of fd
// would find the peer gone.
func (c *checkedConn) peek(fd uintptr) {
	n, _, err := syscall.Recvfrom(int(fd), c.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	c.closed = n == 0 && err == nil || err == syscall.ECONNRESET
}
