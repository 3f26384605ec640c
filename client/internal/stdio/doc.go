// Package stdio is the room of NewStdio's processes: a stdio server's
// command run in a process group of its own, its pipes, its stderr, and
// its end (stdin closed, SIGTERM, SIGKILL); and their supervision
// (supervisor.go: the restart intensity, crash loops, idle stops). The
// client initializes a session on each process (client/stdio.go); this
// package knows nothing of sessions.
package stdio
