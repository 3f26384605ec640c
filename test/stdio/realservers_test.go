package stdio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/test/internal/everything"
)

// realServer is a stdio server nobody here wrote: how to start it, a call
// safe to repeat, and a call of a tool annotated neither read-only nor
// idempotent that carries a marker.
type realServer struct {
	name    string
	command string
	args    []string
	skip    func() error
	safe    func(ctx context.Context, c *client.ResilientClient) error
	unsafe  func(marker string) mcp.CallToolRequest
}

func listTools(ctx context.Context, c *client.ResilientClient) error {
	_, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	return err
}

func toolRequest(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	return req
}

func realServers() []realServer {
	node, nodeArgs := everything.StdioCommand()
	return []realServer{
		{
			name: "server-everything", command: node, args: nodeArgs, skip: everything.Installed,
			safe: func(ctx context.Context, c *client.ResilientClient) error {
				_, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"message": "hi"}))
				return err
			},
			// toggle-simulated-logging is annotated neither read-only nor
			// idempotent; the SDK strips the unknown marker, which travels
			// in the request for the count.
			unsafe: func(m string) mcp.CallToolRequest {
				return toolRequest("toggle-simulated-logging", map[string]any{"marker": m})
			},
		},
		{
			name: "go-sdk", command: goSDKBin, safe: listTools,
			unsafe: func(m string) mcp.CallToolRequest { return toolRequest("greet", map[string]any{"name": m}) },
		},
		{
			name: "mcp-go", command: mcpGoBin, safe: listTools,
			unsafe: func(m string) mcp.CallToolRequest { return toolRequest("echo", map[string]any{"message": m}) },
		},
	}
}

// teeCommand runs command through a shell that copies every line the
// client sends it to log, to count the requests the server may have run
// (an upper bound: a request written and never read counts). The shell
// leads the process group; tee and the server are its children.
func teeCommand(log, command string, args []string) (string, []string) {
	return "/bin/sh", append([]string{"-c", `log=$1; shift; tee -a "$log" | exec "$@"`, "sh", log, command}, args...)
}

// sent counts, by marker, the tools/call requests written to the server.
func sent(t *testing.T, log string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, "marker-"); i >= 0 && strings.Contains(line, `"tools/call"`) {
			m := line[i:]
			m = m[:strings.IndexAny(m+`"`, `"`)]
			n[m]++
		}
	}
	return n
}

// serverChild is the child of the shell leader that is not tee: the server.
func serverChild(t *testing.T, leader int) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		comm := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if atoi(f[1]) == leader && comm != "tee" {
			return pid
		}
	}
	t.Fatalf("no server child of %d", leader)
	return 0
}

// TestStdioRealServersSIGKILL: each server nobody here wrote, run over
// stdio, is killed with SIGKILL under 8 goroutines of calls: every safe
// call succeeds, no unannotated tool call is sent twice, every failure is
// ErrOutcomeUnknown or ErrUnavailable; Close leaves nothing of the group.
func TestStdioRealServersSIGKILL(t *testing.T) {
	for _, srv := range realServers() {
		t.Run(srv.name, func(t *testing.T) {
			if srv.skip != nil {
				if err := srv.skip(); err != nil {
					t.Skip(err)
				}
			}
			log := filepath.Join(t.TempDir(), "sent.log")
			command, args := teeCommand(log, srv.command, srv.args)
			c, err := client.NewStdio(command, args, client.WithBackOff(fastBackOff), client.WithStdioStopTimeout(500*time.Millisecond), client.WithLogger(testLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := srv.safe(ctx, c); err != nil {
				t.Fatal(err)
			}
			leader := c.Stats().PID
			victim := serverChild(t, leader)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []error
			var safeFailures []error
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 20 {
						var err error
						if g%2 == 0 {
							if err = srv.safe(ctx, c); err != nil {
								mu.Lock()
								safeFailures = append(safeFailures, err)
								mu.Unlock()
							}
							continue
						}
						if _, err = c.CallTool(ctx, srv.unsafe(fmt.Sprintf("marker-%d-%d", g, i))); err != nil {
							mu.Lock()
							failures = append(failures, err)
							mu.Unlock()
						}
					}
				}()
			}
			time.Sleep(20 * time.Millisecond)
			if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			checkKilledUnderLoad(t, safeFailures, failures, sent(t, log), "sent")
			st := c.Stats()
			t.Logf("unsafe failures %d; restarts %d; last exit %v", len(failures), st.Restarts, st.LastExit)
			if st.Restarts < 1 {
				t.Errorf("no restart after SIGKILL")
			}
			leader = st.PID
			_ = c.Close()
			assertGroupGone(t, leader)
		})
	}
}

// TestStdioRealServersHang: each server nobody here wrote, stopped with
// SIGSTOP, is found by its keepalive ping and replaced; a safe call made
// meanwhile is answered by the next process, and nothing of the stopped
// one's group is left.
//
// How soon is not asserted (see TestStdioHangReplaced): the keepalive
// interval and the probe's timeout by construction, plus a start of the
// server, and node takes 2 s and more to start server-everything on a
// loaded machine. What is asserted is that a failed probe found the hang
// (LossUnhealthy), which nothing else can before the call's 60 s deadline.
// The probe's timeout is generous, so that a live server slow to answer on
// a loaded machine (node starting) is not replaced too.
func TestStdioRealServersHang(t *testing.T) {
	const interval = 500 * time.Millisecond
	for _, srv := range realServers() {
		t.Run(srv.name, func(t *testing.T) {
			if srv.skip != nil {
				if err := srv.skip(); err != nil {
					t.Skip(err)
				}
			}
			log := filepath.Join(t.TempDir(), "sent.log")
			command, args := teeCommand(log, srv.command, srv.args)
			var losses lossRecorder
			c, err := client.NewStdio(command, args, client.WithBackOff(fastBackOff), client.WithKeepAlive(interval), client.WithKeepAliveTimeout(2*time.Second),
				client.WithStdioStopTimeout(200*time.Millisecond), client.WithLogger(testLogger(t)), losses.observer())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := srv.safe(ctx, c); err != nil {
				t.Fatal(err)
			}
			leader := c.Stats().PID
			sigstop(t, serverChild(t, leader))
			stopped := time.Now()
			if err := srv.safe(ctx, c); err != nil {
				t.Fatalf("a safe call across the hang: %v", err)
			}
			t.Logf("answered by a new process %v after SIGSTOP (keepalive %v)", time.Since(stopped), interval)
			if c.Stats().PID == leader {
				t.Fatal("the stopped process is still in service")
			}
			if !losses.unhealthy() || c.Stats().ProbeFailures == 0 {
				t.Errorf("replaced, but not for a failed probe: losses %v, probe failures %d", losses.list(), c.Stats().ProbeFailures)
			}
			assertGroupGone(t, leader)
		})
	}
}
