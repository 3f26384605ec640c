// Package stdio is the room of NewStdio's processes: a stdio server's
// command run in a process group of its own, its pipes, its stderr, and
// its end (stdin closed, SIGTERM, SIGKILL); and their supervision
// (supervisor.go: the restart intensity, crash loops, idle stops). The
// package initializes an mcp-go session on each process (open.go), which
// the client makes its session of; it knows nothing of the client's
// sessions.
package stdio
