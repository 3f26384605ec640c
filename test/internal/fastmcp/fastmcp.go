// Package fastmcp runs a small FastMCP (TypeScript) server in stateless
// mode, server.mjs, on the fastmcp package pinned by this directory's
// package-lock.json, as a node child process: a sessionless server nobody
// here wrote, for the tests that restart it as another program.
//
// Install it with: npm ci --prefix test/internal/fastmcp
package fastmcp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Version is the pinned version of fastmcp (package.json).
const Version = "4.20.16"

// dir is this package's directory, where package.json and node_modules are.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Installed returns nil if node and the pinned fastmcp are there, else an
// error saying what is missing and how to install it.
func Installed() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not installed (apt-get install nodejs npm), then: npm ci --prefix test/internal/fastmcp")
	}
	if _, err := os.Stat(filepath.Join(dir(), "node_modules", "fastmcp", "package.json")); err != nil {
		return fmt.Errorf("fastmcp %s is not installed: npm ci --prefix test/internal/fastmcp", Version)
	}
	return nil
}

// Command is the command that runs server.mjs: node and its arguments. The
// server reads what it is from its environment (see server.mjs).
func Command() (string, []string) {
	return "node", []string{filepath.Join(dir(), "server.mjs")}
}
