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
