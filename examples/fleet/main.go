// Command fleet runs an agent's two MCP servers from one mcp.json with
// package fleet: server-everything over stdio, and an HTTP server (mcp-go's,
// in this process). It lists their tools as one list, calls one of each,
// then kills each server in turn and shows what the agent sees: the HTTP
// server's tools still listed (stale) and a call to them failing at once
// while the other server's calls go on, server-everything SIGKILLed and a
// call to it succeeding on the process the client starts again, and the
// HTTP server used again once it is back.
//
//	npm ci --prefix test/internal/everything   # once: the pinned server
//	go run ./examples/fleet
//
// It skips with a message when node or the package is missing.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/fleet"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// mcpJSON is the agent's config, as Claude Code or VS Code (JSONC) write it.
const mcpJSON = `{
  "mcpServers": {
    // The TypeScript reference server, over stdio.
    "everything": {"command": "node", "args": [%q, "stdio"]},
    // A team's notes server, over HTTP, with a key from the environment.
    "notes": {
      "url": "http://%s/mcp",
      "headers": {"X-Api-Key": "${NOTES_API_KEY:-demo-key}"},
      "keepAlive": "10s",
    },
  },
}`

func run() error {
	entry, err := serverEverything()
	if err != nil {
		fmt.Println("skipped:", err)
		return nil
	}
	if runtime.GOOS == "windows" {
		fmt.Println("skipped: the example kills a server with SIGKILL, which Windows does not have")
		return nil
	}
	notes, err := startNotes("127.0.0.1:0")
	if err != nil {
		return err
	}
	cfg, err := fleet.Parse(fmt.Appendf(nil, mcpJSON, entry, notes.addr))
	if err != nil {
		return err
	}
	fmt.Println("== config (secrets redacted):", cfg)
	f, err := fleet.New(cfg, fleet.WithToolsChanged(func() { fmt.Println("   (the merged list of tools changed)") }))
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	began := time.Now()
	if err := f.Start(ctx); err != nil {
		return err
	}
	fmt.Printf("== Start: both servers ready in %v\n", time.Since(began).Round(time.Millisecond))
	if err := list(ctx, f); err != nil {
		return err
	}
	if err := callBoth(ctx, f); err != nil {
		return err
	}

	fmt.Println("== the notes server goes down")
	notes.stop()
	if err := list(ctx, f); err != nil {
		return err
	}
	callCtx, cancelCall := context.WithTimeout(ctx, 30*time.Second)
	began = time.Now()
	_, err = f.CallTool(callCtx, echo("notes__note", "lost"))
	cancelCall()
	if !errors.Is(err, client.ErrUnavailable) {
		return fmt.Errorf("a call to the notes server while it is down: %v, want ErrUnavailable", err)
	}
	fmt.Printf("   notes__note: failed after %v under a 30 s deadline, ErrUnavailable (it did not run)\n", time.Since(began).Round(time.Microsecond))
	if err := callOne(ctx, f, "everything__echo"); err != nil {
		return err
	}

	c, _ := f.Client("everything")
	pid := c.Stats().PID
	fmt.Printf("== server-everything (pid %d) is SIGKILLed\n", pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	if err := callOne(ctx, f, "everything__echo"); err != nil {
		return err
	}
	fmt.Printf("   on a new process, pid %d\n", c.Stats().PID)

	fmt.Println("== the notes server is back")
	if notes, err = startNotes(notes.addr); err != nil {
		return err
	}
	defer notes.stop()
	for i := 0; ; i++ {
		err := callOne(ctx, f, "notes__note")
		if err == nil {
			break
		}
		if i == 100 {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := list(ctx, f); err != nil {
		return err
	}
	return f.Close()
}

func list(ctx context.Context, f *fleet.Fleet) error {
	res, err := f.ListTools(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	fmt.Printf("   ListTools: %d tools: %s\n", len(names), strings.Join(names, " "))
	for _, s := range f.Status() {
		fmt.Printf("   %-10s %-12v tools %-2d stale %-5v err %v\n", s.Name, s.State, s.Tools, s.Stale, s.Err)
	}
	return nil
}

func callBoth(ctx context.Context, f *fleet.Fleet) error {
	if err := callOne(ctx, f, "everything__echo"); err != nil {
		return err
	}
	return callOne(ctx, f, "notes__note")
}

func callOne(ctx context.Context, f *fleet.Fleet, tool string) error {
	res, err := f.CallTool(ctx, echo(tool, "hello"))
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			fmt.Printf("   %s: %q\n", tool, t.Text)
		}
	}
	return nil
}

func echo(tool, text string) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, map[string]any{"message": text, "text": text}
	return req
}

// notesServer is an mcp-go server over HTTP that wants its key on every
// request.
type notesServer struct {
	addr string
	srv  *http.Server
}

func startNotes(addr string) (*notesServer, error) {
	var ln net.Listener
	var err error
	for range 50 { // the port of the server stopped a moment ago
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	s := server.NewMCPServer("notes", "1.0.0")
	s.AddTool(mcp.NewTool("note", mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("noted: " + req.GetString("text", "")), nil
		})
	mcpHandler := server.NewStreamableHTTPServer(s)
	want := os.Getenv("NOTES_API_KEY")
	if want == "" {
		want = "demo-key"
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != want {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	n := &notesServer{addr: ln.Addr().String(), srv: &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = n.srv.Serve(ln) }()
	return n, nil
}

// stop ends the server at once, as a killed process would: its listener
// and every connection closed.
func (n *notesServer) stop() { _ = n.srv.Close() }

// serverEverything finds the pinned server-everything from the working
// directory up to the repository's root.
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
			return "", errors.New("run it from the repository: go run ./examples/fleet")
		}
		dir = parent
	}
}
