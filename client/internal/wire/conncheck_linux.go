package wire

import (
	"syscall"
	"unsafe"
)

// tcpCloseWait is Linux's TCP_CLOSE_WAIT: the peer has sent its FIN.
const tcpCloseWait = 8

// peerFinished reports whether the peer of the TCP socket fd has finished
// sending (its FIN arrived), from the state that begins struct tcp_info.
func peerFinished(fd uintptr) bool {
	var info [8]byte
	n := uint32(len(info))
	_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
		uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&n)), 0)
	return errno == 0 && n >= 1 && info[0] == tcpCloseWait
}

// recvPeek is recvfrom(2) with MSG_PEEK|MSG_DONTWAIT, made as a raw system
// call: it never blocks, so the scheduler need not be told of it, and
// there is no sender's address to read on a connected socket
// (syscall.Recvfrom does both, about a tenth of the check's cost).
func recvPeek(fd uintptr, buf []byte) (int, error) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(n), nil
}
