// Package supergateway runs supergateway, pinned by this directory's
// package-lock.json, as a node child process on 127.0.0.1: server-everything
// over stdio behind supergateway's HTTP+SSE output (GET /sse, POST
// /message?sessionId=…). One child serves every session, and supergateway
// sends every message the child writes to every open stream: each client
// sees the others' answers, with the ids they chose.
//
// Install it with: npm ci --prefix test/internal/supergateway (and
// server-everything: npm ci --prefix test/internal/everything).
package supergateway

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/resilientmcp/resilientmcp/test/internal/everything"
)

// Version is the pinned version of supergateway (package.json).
const Version = "4.0.0"

func entry() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "node_modules", "supergateway", "dist", "index.js")
}

// Installed returns nil if node, supergateway and server-everything are
// there, else an error saying what is missing and how to install it.
func Installed() error {
	if err := everything.Installed(); err != nil {
		return err
	}
	if _, err := os.Stat(entry()); err != nil {
		return fmt.Errorf("supergateway %s is not installed: npm ci --prefix test/internal/supergateway", Version)
	}
	return nil
}

// Command is the command that runs supergateway on port of 127.0.0.1,
// with server-everything over stdio as its child; the caller starts and
// ends it (its child ends with it: its stdin closes).
func Command(port int) *exec.Cmd {
	node, args := everything.StdioCommand()
	child := strings.Join(append([]string{node}, args...), " ")
	return exec.Command("node", "--require", everything.LoopbackPreload(), entry(),
		"--stdio", child, "--port", strconv.Itoa(port), "--logLevel", "none")
}
