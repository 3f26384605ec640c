package stdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// fastBackOff restarts within tens of milliseconds, so that the tests
// measure the client, not the backoff.
func fastBackOff() backoff.BackOff {
	return backoff.NewExponentialBackOff(backoff.WithInitialInterval(20*time.Millisecond), backoff.WithMaxInterval(200*time.Millisecond), backoff.WithMaxElapsedTime(0))
}

// testLogger logs to the test's log, for a failure's story.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// newClient starts a client of the test server with env, and a log file for
// "append"; it is closed at the end of the test.
func newClient(t *testing.T, env []string, opts ...client.Option) (*client.ResilientClient, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "ran.log")
	opts = append([]client.Option{
		client.WithStdioEnv(append([]string{"STDIOSERVER_LOG=" + log}, env...)...),
		client.WithBackOff(fastBackOff),
		client.WithStdioStopTimeout(300 * time.Millisecond),
		client.WithLogger(testLogger(t)),
	}, opts...)
	c, err := client.NewStdio(serverBin, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, log
}

func call(ctx context.Context, c *client.ResilientClient, tool string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %v", res.Content)
	}
	return res.Content[0].(mcp.TextContent).Text, nil
}

func pidOf(t *testing.T, c *client.ResilientClient) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := call(ctx, c, "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(s)
	return pid
}

// ranCounts is how many times each id of "append" ran, from its log.
func ranCounts(t *testing.T, log string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, id := range strings.Fields(string(b)) {
		n[id]++
	}
	return n
}

// TestStdioFirstCallStartsTheProcess: NewStdio does no I/O; the first call
// starts the process, and Close ends it.
func TestStdioFirstCallStartsTheProcess(t *testing.T) {
	c, _ := newClient(t, nil)
	if st := c.Stats(); st.PID != 0 {
		t.Fatalf("a process before the first call: %d", st.PID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := call(ctx, c, "echo", map[string]any{"text": "hi"})
	if err != nil || got != "hi" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	pid := c.Stats().PID
	if pid == 0 {
		t.Fatal("Stats().PID = 0 while the process runs")
	}
	_ = c.Close()
	assertGroupGone(t, pid)
}

// TestStdioSIGKILLUnderLoad: the process is killed with SIGKILL under 8
// goroutines of calls. Every safe call succeeds; the unannotated tool never
// runs twice; every failure is ErrOutcomeUnknown or ErrUnavailable.
func TestStdioSIGKILLUnderLoad(t *testing.T) {
	c, log := newClient(t, nil)
	pid := pidOf(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var safeFailed, unsafeFailed []error
	unsafeOK := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				if g%2 == 0 {
					if _, err := call(ctx, c, "echo", map[string]any{"text": "x", "ms": 20}); err != nil {
						mu.Lock()
						safeFailed = append(safeFailed, err)
						mu.Unlock()
					}
					continue
				}
				_, err := call(ctx, c, "append", map[string]any{"id": fmt.Sprintf("g%d-%d", g, i), "ms": 20})
				mu.Lock()
				if err != nil {
					unsafeFailed = append(unsafeFailed, err)
				} else {
					unsafeOK++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, err := range safeFailed {
		t.Errorf("a safe call failed: %v", err)
	}
	for _, err := range unsafeFailed {
		if !errors.Is(err, client.ErrOutcomeUnknown) && !errors.Is(err, client.ErrUnavailable) {
			t.Errorf("an untyped failure: %v", err)
		}
	}
	for id, n := range ranCounts(t, log) {
		if n > 1 {
			t.Errorf("append %s ran %d times", id, n)
		}
	}
	st := c.Stats()
	if st.Restarts < 1 || st.LastExit.Signal != syscall.SIGKILL {
		t.Errorf("Stats: Restarts %d, LastExit %v; want a restart after SIGKILL", st.Restarts, st.LastExit)
	}
	t.Logf("unsafe calls: %d ok, %d failed (%v); restarts %d", unsafeOK, len(unsafeFailed), unsafeFailed, st.Restarts)
}

// assertGroupGone checks in /proc that no process of the group led by pgid
// is left, and no zombie child of the test.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		state, ppid, pgrp := f[0], atoi(f[1]), atoi(f[2])
		if pgrp == pgid {
			t.Errorf("process %d of the group %d left (state %s): %s", pid, pgid, state, s)
		}
		if ppid == me && state == "Z" {
			t.Errorf("zombie child %d: %s", pid, s)
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
