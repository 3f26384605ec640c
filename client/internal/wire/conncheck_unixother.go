//go:build unix && !linux

package wire

import "syscall"

// peerFinished cannot ask the kernel here: a connection with bytes unread
// is taken to be open.
func peerFinished(uintptr) bool { return false }

// recvPeek is recvfrom(2) with MSG_PEEK|MSG_DONTWAIT.
func recvPeek(fd uintptr, buf []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
