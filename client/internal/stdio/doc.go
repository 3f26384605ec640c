// Package stdio is the room of NewStdio's processes: a stdio server's
// command run in a process group of its own, its pipes, its stderr, and
// its end (stdin closed, SIGTERM, SIGKILL). The client supervises them
// (client/stdio.go: restarts, idle stops); this package knows nothing of
// sessions.
package stdio
