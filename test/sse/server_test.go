package sse_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resilientmcp/resilientmcp/test/internal/everything"
	"github.com/resilientmcp/resilientmcp/test/internal/fastmcp"
	"github.com/resilientmcp/resilientmcp/test/internal/supergateway"
)

// The servers of these tests run as processes, this test binary executed
// again (TestHelperSSEServer), so that a restart is a SIGKILL and a new
// process on the same port. SSESERVER_KIND picks the server: "mcpgo"
// (mcp-go's server.NewSSEServer) or "gosdk" (go-sdk's mcp.NewSSEHandler);
// the tools are ours, the transport theirs. SSESERVER_ADDR is where it
// listens; SSESERVER_LOG a file each run of the unannotated tool
// "increment" appends its id to (O_APPEND), so that a test counts runs
// across processes. A subscription to test://counter makes the server send
// notifications/resources/updated for it every 50 ms.

const counterURI = "test://counter"

// TestHelperSSEServer is the server process; it does nothing in a normal
// run.
func TestHelperSSEServer(t *testing.T) {
	kind := os.Getenv("SSESERVER_KIND")
	if kind == "" {
		t.Skip("a helper process")
	}
	ln, err := net.Listen("tcp", os.Getenv("SSESERVER_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(2)
	}
	ran := func(id string) {
		f, err := os.OpenFile(os.Getenv("SSESERVER_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintln(f, id)
			f.Close()
		}
	}
	var h http.Handler
	switch kind {
	case "mcpgo":
		h = mcpgoServer(ran)
	case "gosdk":
		h = gosdkServer(ran)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() { <-sigs; os.Exit(0) }()
	_ = http.Serve(ln, h)
	os.Exit(0)
}

func mcpgoServer(ran func(string)) http.Handler {
	var mu sync.Mutex
	subscribed := map[string]bool{}
	hooks := &server.Hooks{}
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, _ *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			mu.Lock()
			subscribed[cs.SessionID()] = true
			mu.Unlock()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		mu.Lock()
		delete(subscribed, cs.SessionID())
		mu.Unlock()
	})
	m := server.NewMCPServer("sse-mcpgo", "1", server.WithToolCapabilities(true), server.WithResourceCapabilities(true, false), server.WithHooks(hooks))
	m.AddTool(mcp.NewTool("echo", mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	m.AddTool(mcp.NewTool("increment", mcp.WithString("id")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran(req.GetString("id", ""))
			return mcp.NewToolResultText("incremented"), nil
		})
	m.AddResource(mcp.NewResource(counterURI, "counter"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: counterURI, Text: "0"}}, nil
	})
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			mu.Lock()
			for id := range subscribed {
				_ = m.SendNotificationToSpecificClient(id, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": counterURI})
			}
			mu.Unlock()
		}
	}()
	return server.NewSSEServer(m)
}

func gosdkServer(ran func(string)) http.Handler {
	srv := gosdk.NewServer(&gosdk.Implementation{Name: "sse-gosdk", Version: "1"}, &gosdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *gosdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *gosdk.UnsubscribeRequest) error { return nil },
	})
	type echoIn struct {
		Text string `json:"text"`
	}
	type incIn struct {
		ID string `json:"id"`
	}
	gosdk.AddTool(srv, &gosdk.Tool{Name: "echo", Annotations: &gosdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *gosdk.CallToolRequest, in echoIn) (*gosdk.CallToolResult, any, error) {
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: in.Text}}}, nil, nil
		})
	gosdk.AddTool(srv, &gosdk.Tool{Name: "increment"},
		func(_ context.Context, _ *gosdk.CallToolRequest, in incIn) (*gosdk.CallToolResult, any, error) {
			ran(in.ID)
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "incremented"}}}, nil, nil
		})
	srv.AddResource(&gosdk.Resource{URI: counterURI, Name: "counter"}, func(context.Context, *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
		return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: counterURI, Text: "0"}}}, nil
	})
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			_ = srv.ResourceUpdated(context.Background(), &gosdk.ResourceUpdatedNotificationParams{URI: counterURI})
		}
	}()
	return gosdk.NewSSEHandler(func(*http.Request) *gosdk.Server { return srv }, nil)
}

// process is a server of these tests run as a process of its own,
// started again on the same port after every kill.
type process struct {
	t       *testing.T
	kind    string
	addr    string
	log     string
	cmd     *exec.Cmd
	exited  chan struct{}
	ssePath string
}

// startProcess starts the server of kind ("mcpgo", "gosdk", "everything":
// server-everything's SSE mode with node, or "supergateway":
// server-everything over stdio behind supergateway, or "fastmcp": a
// FastMCP server of ours, its /sse) on a free port.
func startProcess(t *testing.T, kind string) *process {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &process{t: t, kind: kind, addr: addr, log: filepath.Join(t.TempDir(), "runs.log"), ssePath: "/sse"}
	p.start()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *process) URL() string { return "http://" + p.addr + p.ssePath }

func (p *process) start() {
	t := p.t
	t.Helper()
	for attempt := 0; ; attempt++ {
		var cmd *exec.Cmd
		switch p.kind {
		case "everything":
			cmd = everythingSSE(t, p.addr)
		case "supergateway":
			cmd = supergatewaySSE(t, p.addr)
		case "fastmcp":
			if err := fastmcp.Installed(); err != nil {
				t.Skipf("fastmcp: %v", err)
			}
			_, port, _ := net.SplitHostPort(p.addr)
			n, _ := strconv.Atoi(port)
			cmd = fastmcp.SSECommand(n, p.log)
		default:
			cmd = exec.Command(os.Args[0], "-test.run=^TestHelperSSEServer$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SSESERVER_KIND="+p.kind, "SSESERVER_ADDR="+p.addr, "SSESERVER_LOG="+p.log)
		}
		if p.kind != "fastmcp" { // it logs every connection to stderr
			cmd.Stderr = os.Stderr
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		p.cmd, p.exited = cmd, exited
		// supergateway starts node twice (itself, its child): under a
		// loaded machine (CI runs packages in parallel) that took over 15 s.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				if attempt < 20 {
					time.Sleep(50 * time.Millisecond) // the port still held by the old one's sockets
					goto again
				}
				t.Fatalf("%s server exited before listening on %s", p.kind, p.addr)
			default:
			}
			if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
				c.Close()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s server did not listen on %s", p.kind, p.addr)
	again:
	}
}

// restart SIGKILLs the server and starts another on the same port.
func (p *process) restart() {
	p.kill()
	p.start()
}

func (p *process) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	p.cmd = nil
}

// runs counts the runs of increment by id, across the processes.
func (p *process) runs() map[string]int {
	b, _ := os.ReadFile(p.log)
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out[l]++
		}
	}
	return out
}

func supergatewaySSE(t *testing.T, addr string) *exec.Cmd {
	if err := supergateway.Installed(); err != nil {
		t.Skipf("supergateway: %v", err)
	}
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return supergateway.Command(n)
}

func everythingSSE(t *testing.T, addr string) *exec.Cmd {
	if err := everything.Installed(); err != nil {
		t.Skipf("server-everything: %v", err)
	}
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return everything.SSECommand(n)
}
