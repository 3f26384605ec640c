//go:build unix

package stdio

import (
	"errors"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd as the leader of a process group of its own,
// so that it and what it starts (npx's node, a shell script's children)
// are ended together, by kill(-pgid).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

type sysSignal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// signalGroup sends sig to every process of the group led by pgid. A
// stopped process (SIGSTOP, a debugger) is continued too, so that it can
// act on SIGTERM.
//
// The leader may have been reaped already: its pid stays reserved as the
// group's id for as long as a process of the group lives (Linux frees a pid
// only once no process uses it as pid, group id or session id), so the
// signal reaches the group or nobody.
func signalGroup(pgid int, sig sysSignal) {
	_ = syscall.Kill(-pgid, sig)
	if sig == sigTerm {
		_ = syscall.Kill(-pgid, syscall.SIGCONT)
	}
}

// groupAlive reports whether a process of the group led by pgid is left.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
