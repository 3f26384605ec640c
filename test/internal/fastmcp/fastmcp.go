// Package fastmcp runs a FastMCP server (the TypeScript framework, pinned
// by this directory's package-lock.json; server.mjs) as a node child
// process on 127.0.0.1, for test/sse: FastMCP's HTTP stream transport also
// speaks HTTP+SSE, at /sse.
//
// Install it with: npm ci --prefix test/internal/fastmcp
package fastmcp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
)

// Version is the pinned version of fastmcp (package.json).
const Version = "4.20.16"

func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Installed returns nil if node and the pinned FastMCP are there, else an
// error saying what is missing and how to install it.
func Installed() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not installed (apt-get install nodejs npm), then: npm ci --prefix test/internal/fastmcp")
	}
	if _, err := os.Stat(filepath.Join(dir(), "node_modules", "fastmcp")); err != nil {
		return fmt.Errorf("fastmcp %s is not installed: npm ci --prefix test/internal/fastmcp", Version)
	}
	return nil
}

// Command is the command that runs server.mjs on port of 127.0.0.1, each
// run of its tool "increment" appended to runs; the caller starts and ends
// it.
func Command(port int, runs string) *exec.Cmd {
	cmd := exec.Command("node", filepath.Join(dir(), "server.mjs"))
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "SSESERVER_LOG="+runs)
	return cmd
}
