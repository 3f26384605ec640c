//go:build !unix

package stdio

import "os/exec"

// Outside unix a stdio server is ended alone, and its children are not: a
// job object would end them on Windows, and is not done yet. stdin is
// closed first; after the grace period the process is killed (there is no
// SIGTERM to send).
func ownProcessGroup(cmd *exec.Cmd) {}

type sysSignal int

const (
	sigTerm sysSignal = iota + 1
	sigKill
)

func signalGroup(pgid int, sig sysSignal) {}

func groupAlive(pgid int) bool { return false }
