// Command stdio runs the TypeScript reference server, server-everything,
// over stdio under a ResilientClient, kills it with SIGKILL in the middle of
// a call, and shows the call succeed: the client starts the server again,
// initializes it, and sends the call (read-only, so safe to repeat) again.
//
//	npm ci --prefix test/internal/everything   # once: the pinned server
//	go run ./examples/stdio
//
// It runs node on the pinned package (not npx), and skips with a message
// when node or the package is missing.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stdio:", err)
		os.Exit(1)
	}
}

func run() error {
	entry, err := serverEverything()
	if err != nil {
		fmt.Println("skipped:", err)
		return nil
	}
	if runtime.GOOS == "windows" {
		fmt.Println("skipped: the demo kills the server with SIGKILL, which Windows does not have")
		return nil
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "line" && a.Value.String() == "" {
				return slog.Attr{}
			}
			return a
		}}))
	c, err := client.NewStdio("node", []string{entry, "stdio"}, client.WithLogger(log))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A read-only tool that runs for 2 s: safe to repeat.
	req := mcp.CallToolRequest{}
	req.Params.Name = "trigger-long-running-operation"
	req.Params.Arguments = map[string]any{"duration": 2, "steps": 4}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	fmt.Println("== calling trigger-long-running-operation (2 s) on server-everything over stdio")
	go func() {
		res, err := c.CallTool(ctx, req)
		done <- answer{res, err}
	}()
	pid := 0
	for pid == 0 && ctx.Err() == nil {
		pid = c.Stats().PID
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // the call is in flight now
	fmt.Printf("== killing the server (pid %d) with SIGKILL in the middle of the call\n", pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	a := <-done
	if a.err != nil {
		return fmt.Errorf("the call failed: %w", a.err)
	}
	st := c.Stats()
	fmt.Printf("== the call succeeded: %v\n", a.res.Content[0].(mcp.TextContent).Text)
	fmt.Printf("== server restarted %d time(s); the killed one: %v; the new one: pid %d\n", st.Restarts, st.LastExit, st.PID)
	return nil
}

// serverEverything finds the pinned server-everything of
// test/internal/everything, from the current directory up to the
// repository's root.
func serverEverything() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("node is not installed (apt-get install nodejs npm)")
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		entry := filepath.Join(dir, "test", "internal", "everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
		if _, err := os.Stat(entry); err == nil {
			return entry, nil
		}
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return "", errors.New("server-everything is not installed: npm ci --prefix test/internal/everything")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run it from the repository: go run ./examples/stdio")
		}
		dir = parent
	}
}
