package sse_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// sseServer is one server under test: its stream's URL (through a tapping
// proxy for server-everything, which cannot count its runs), its safe and
// unsafe tools, and how many times each unsafe call ran.
type sseServer struct {
	p     *process
	proxy *faultproxy.Proxy
	url   string
}

func startServer(t *testing.T, kind string) *sseServer {
	t.Helper()
	p := startProcess(t, kind)
	s := &sseServer{p: p, url: p.URL()}
	if typescript(kind) {
		proxy, err := faultproxy.New(p.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { proxy.Close() })
		proxy.SetTap(true)
		s.proxy, s.url = proxy, proxy.URL("/sse")
	}
	return s
}

func (s *sseServer) echo(text string) (mcp.CallToolRequest, string) {
	if typescript(s.p.kind) {
		return rig.ToolRequest("echo", map[string]any{"message": text}), "Echo: " + text
	}
	return rig.ToolRequest("echo", map[string]any{"text": text}), text
}

// unsafe is a call of a tool annotated neither read-only nor idempotent,
// carrying marker: server-everything's toggle-simulated-logging (the
// marker rides in the body for the tap to find), ours' increment.
func (s *sseServer) unsafe(marker string) mcp.CallToolRequest {
	if typescript(s.p.kind) {
		return rig.ToolRequest("toggle-simulated-logging", map[string]any{"marker": marker})
	}
	return rig.ToolRequest("increment", map[string]any{"id": marker})
}

// ran is how many times each unsafe call ran: counted by the server
// processes, or, for server-everything, by the requests carrying its
// marker that the tap saw go out and not refused unread (rig's count for
// server-everything over Streamable HTTP, which reads HTTP/1.1 exchanges
// alike): an upper bound, a POST that reached no handler counts.
func (s *sseServer) ran(t *testing.T) map[string]int {
	if s.proxy == nil {
		return s.p.runs()
	}
	return (&rig.ServerEverything{Proxy: s.proxy}).Ran(t)
}

// newSessions is how many sessions c opened in place of lost or expired
// ones.
func newSessions(c *client.ResilientClient) uint64 {
	st := c.Stats()
	return st.Redials + st.Reinitializations
}

// typescript reports whether the server of kind is server-everything,
// directly or behind supergateway: its tools, and runs counted by a tap.
func typescript(kind string) bool { return kind == "everything" || kind == "supergateway" }

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// typed reports whether err says whether the call may have run.
func typed(err error) bool {
	return errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrUnavailable)
}

// load is 8 goroutines calling, alternately a safe and an unsafe tool,
// until stop is closed; it checks what each call returned.
type load struct {
	mu               sync.Mutex
	safeOK, unsafeOK int
	unsafeTyped      int
	unsafeSucceeded  []string
	unsafeMayHaveRun []string
	wg               sync.WaitGroup
}

func runLoad(t *testing.T, c *client.ResilientClient, s *sseServer, stop <-chan struct{}) *load {
	l := &load{}
	for g := range 8 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				req, want := s.echo(fmt.Sprintf("g%d-%d", g, i))
				res, err := c.CallTool(ctx, req)
				switch {
				case err != nil:
					t.Errorf("safe call %d/%d failed: %v", g, i, err)
				case text(res) != want:
					t.Errorf("safe call %d/%d answered %q, want %q", g, i, text(res), want)
				default:
					l.mu.Lock()
					l.safeOK++
					l.mu.Unlock()
				}
				marker := fmt.Sprintf("u%d-%d", g, i)
				_, err = c.CallTool(ctx, s.unsafe(marker))
				cancel()
				l.mu.Lock()
				switch {
				case err == nil:
					l.unsafeOK++
					l.unsafeSucceeded = append(l.unsafeSucceeded, marker)
				case typed(err):
					l.unsafeTyped++
					if errors.Is(err, client.ErrOutcomeUnknown) {
						l.unsafeMayHaveRun = append(l.unsafeMayHaveRun, marker)
					}
				default:
					t.Errorf("unsafe call %s failed untyped: %v", marker, err)
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// check asserts that no unsafe call ran twice, and that each that
// succeeded ran (where the server counts its runs).
func (l *load) check(t *testing.T, s *sseServer) {
	t.Helper()
	runs := s.ran(t)
	for m, n := range runs {
		if n > 1 {
			t.Errorf("unsafe call %s ran %d times", m, n)
		}
	}
	for _, m := range l.unsafeSucceeded {
		if runs[m] != 1 {
			t.Errorf("unsafe call %s succeeded and ran %d times", m, runs[m])
		}
	}
	t.Logf("safe calls: %d ok; unsafe: %d ok, %d typed failures (%d may have run)", l.safeOK, l.unsafeOK, l.unsafeTyped, len(l.unsafeMayHaveRun))
}

// TestSSERestartUnderLoad: each server is SIGKILLed and started again on
// the same port three times while 8 goroutines call. Every safe call
// succeeds, no unannotated tool runs twice, every failure is typed.
func TestSSERestartUnderLoad(t *testing.T) {
	for _, kind := range []string{"everything", "mcpgo", "gosdk", "supergateway", "fastmcp"} {
		t.Run(kind, func(t *testing.T) {
			s := startServer(t, kind)
			c, err := client.NewSSE(s.url, client.WithKeepAlive(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			l := runLoad(t, c, s, stop)
			for i := range 3 {
				time.Sleep(700 * time.Millisecond)
				before := newSessions(c)
				s.p.restart()
				// The next restart once the client is back on this one
				// (supergateway and its child take a second to serve).
				for deadline := time.Now().Add(20 * time.Second); newSessions(c) == before && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if newSessions(c) == before {
					t.Fatalf("no new session within 20 s of restart %d", i+1)
				}
			}
			time.Sleep(700 * time.Millisecond)
			close(stop)
			l.wg.Wait()
			l.check(t, s)
			st := c.Stats()
			if st.Redials+st.Reinitializations < 3 {
				t.Errorf("Stats: %d redials, %d re-initializations after 3 restarts", st.Redials, st.Reinitializations)
			}
			if l.safeOK == 0 {
				t.Error("no safe call succeeded")
			}
		})
	}
}
