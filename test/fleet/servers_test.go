package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The helper server's environment: where it listens, the name it answers
// with, and the header it wants on every request ("Name=value").
const (
	helperAddrEnv   = "FLEET_HELPER_ADDR"
	helperIDEnv     = "FLEET_HELPER_ID"
	helperHeaderEnv = "FLEET_HELPER_HEADER"
	helperExtraEnv  = "FLEET_HELPER_EXTRA" // "1": one more tool, "extra"
)

// longTool is a tool name of 100 characters.
var longTool = "a_tool_with_a_name_far_longer_than_a_model_api_accepts_" + strings.Repeat("x", 100-56)

// TestHelperMCPGoServer is an mcp-go Streamable HTTP server, run as a
// process of its own by startMCPGo: tools "echo" and "whoami" answer with
// its id, longTool answers "long", "grow" adds the tool "grown", which
// sends notifications/tools/list_changed, and "burst" adds five tools 10 ms
// apart, five notifications. It serves Streamable HTTP at /mcp and
// HTTP+SSE at /sse. Without helperAddrEnv it does
// nothing.
func TestHelperMCPGoServer(t *testing.T) {
	addr := os.Getenv(helperAddrEnv)
	if addr == "" {
		t.Skip("a server process for the other tests")
	}
	id := os.Getenv(helperIDEnv)
	s := server.NewMCPServer(id, "1.0.0", server.WithToolCapabilities(true))
	text := func(s string) server.ToolHandlerFunc {
		return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(s + req.GetString("text", "")), nil
		}
	}
	s.AddTool(mcp.NewTool("echo", mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("text")), text(id+": "))
	s.AddTool(mcp.NewTool("whoami", mcp.WithReadOnlyHintAnnotation(true)), text(id))
	s.AddTool(mcp.NewTool(longTool, mcp.WithReadOnlyHintAnnotation(true)), text("long"))
	s.AddTool(mcp.NewTool("grow"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(mcp.NewTool("grown", mcp.WithReadOnlyHintAnnotation(true)), text("grown"))
		return mcp.NewToolResultText("grew"), nil
	})
	if os.Getenv(helperExtraEnv) == "1" {
		s.AddTool(mcp.NewTool("extra", mcp.WithReadOnlyHintAnnotation(true)), text("extra"))
	}
	s.AddTool(mcp.NewTool("burst"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 5 {
			s.AddTool(mcp.NewTool(fmt.Sprint("burst", i), mcp.WithReadOnlyHintAnnotation(true)), text("burst"))
			time.Sleep(10 * time.Millisecond)
		}
		return mcp.NewToolResultText("burst"), nil
	})
	var handler http.Handler = server.NewStreamableHTTPServer(s)
	if want := os.Getenv(helperHeaderEnv); want != "" {
		name, value, _ := strings.Cut(want, "=")
		next := handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(name) != value {
				http.Error(w, "missing or wrong "+name, http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	// The same server over the 2024-11-05 HTTP+SSE transport.
	sse := server.NewSSEServer(s)
	mux.Handle("/sse", sse)
	mux.Handle("/message", sse)
	if err := http.ListenAndServe(addr, mux); err != nil {
		t.Fatal(err)
	}
}

// proc is a server process on a fixed port of 127.0.0.1, killed by PID and
// started again on the same port.
type proc struct {
	t    *testing.T
	addr string
	args []string
	env  []string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) URL() string { return "http://" + p.addr + "/mcp" }

// SSEURL is the helper server's HTTP+SSE stream.
func (p *proc) SSEURL() string { return "http://" + p.addr + "/sse" }

// freeAddr is a port of 127.0.0.1 free a moment ago, and never one it
// gave before in this process: the kernel may hand a port just closed to
// the next listener, and a test that keeps an address for a server started
// later (a dead URL that comes up) must not find another server of its own
// there.
func freeAddr(t *testing.T) string {
	t.Helper()
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !given[addr] {
			given[addr] = true
			return addr
		}
	}
	t.Fatal("no port of 127.0.0.1 not given before in 100 tries")
	return ""
}

var (
	givenMu sync.Mutex
	given   = map[string]bool{}
)

// startMCPGo starts the mcp-go server process with id on addr ("": a free
// port), wanting header ("Name=value", or "") on every request.
func startMCPGo(t *testing.T, id, addr, header string) *proc {
	if addr == "" {
		addr = freeAddr(t)
	}
	p := &proc{t: t, addr: addr, args: []string{os.Args[0], "-test.run=^TestHelperMCPGoServer$", "-test.count=1"},
		env: []string{helperAddrEnv + "=" + addr, helperIDEnv + "=" + id, helperHeaderEnv + "=" + header}}
	p.start()
	return p
}

// startGoSDK starts go-sdk's everything server over HTTP on a free port.
func startGoSDK(t *testing.T) *proc {
	addr := freeAddr(t)
	p := &proc{t: t, addr: addr, args: []string{goSDKBin, "-http", addr}}
	p.start()
	return p
}

func (p *proc) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.done = make(chan struct{})
	cmd, done := p.cmd, p.done
	go func() { _ = cmd.Wait(); close(done) }()
	p.t.Cleanup(func() { p.kill() })
	for i := 0; i < 500; i++ { // 10 s
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			p.t.Fatalf("%v exited before listening", p.args)
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.t.Fatalf("%v did not listen on %s within 10 s", p.args, p.addr)
}

// kill SIGKILLs the process by PID and waits for it.
func (p *proc) kill() {
	if p.cmd == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

func call(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	return req
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// eventually polls f every 50 ms for up to limit.
func eventually(t *testing.T, limit time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var errNot = errors.New("not yet")
