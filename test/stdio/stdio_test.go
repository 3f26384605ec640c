package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/retry"
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
	checkKilledUnderLoad(t, safeFailed, unsafeFailed, ranCounts(t, log), "ran")
	st := c.Stats()
	if st.Restarts < 1 || st.LastExit.Signal != syscall.SIGKILL {
		t.Errorf("Stats: Restarts %d, LastExit %v; want a restart after SIGKILL", st.Restarts, st.LastExit)
	}
	t.Logf("unsafe calls: %d ok, %d failed (%v); restarts %d", unsafeOK, len(unsafeFailed), unsafeFailed, st.Restarts)
}

// assertGroupGone checks in /proc that no process of the group led by pgid
// is left, and no zombie child of the test: at once after Close, within 3 s
// after a replacement (the old process is stopped in the background).
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	var left []string
	for range 60 {
		if left = groupLeft(t, pgid); len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, l := range left {
		t.Error(l)
	}
}

func groupLeft(t *testing.T, pgid int) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	me := os.Getpid()
	var left []string
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
		// A zombie of another parent (a grandchild orphaned to init) is
		// dead, and its reaping is init's.
		if pgrp == pgid && (state != "Z" || ppid == me) {
			left = append(left, fmt.Sprintf("process %d of the group %d left (state %s): %.60s", pid, pgid, state, s))
		}
		if ppid == me && state == "Z" {
			left = append(left, fmt.Sprintf("zombie child %d: %.60s", pid, s))
		}
	}
	return left
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestStdioHangReplaced: a process alive but silent (SIGSTOP) is found by
// its keepalive ping and replaced; a call in flight on it that is safe to
// repeat is answered by the next.
//
// How soon is not asserted: it is the keepalive interval and the probe's
// timeout by construction, plus the start of a process, which a loaded
// machine makes as slow as it likes; a wall-clock limit here would measure
// the machine. What is asserted is that the probe found the hang (a loss
// for a failed probe, LossUnhealthy), which nothing else in the test can
// cause before the call's 20 s deadline. The probe's timeout is generous,
// so that a live process slow to answer on a loaded machine is not
// replaced too; it only delays the finding of the hung one.
func TestStdioHangReplaced(t *testing.T) {
	const interval = 400 * time.Millisecond
	var losses lossRecorder
	c, _ := newClient(t, nil, client.WithKeepAlive(interval), client.WithKeepAliveTimeout(2*time.Second), losses.observer())
	pid := pidOf(t, c)
	sigstop(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// In flight on the stopped process: answered by the next one.
	got, err := call(ctx, c, "echo", map[string]any{"text": "after the hang"})
	if err != nil || got != "after the hang" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	newPID := c.Stats().PID
	if newPID == pid || newPID == 0 {
		t.Fatalf("PID %d after the hang, was %d", newPID, pid)
	}
	if !losses.unhealthy() || c.Stats().ProbeFailures == 0 {
		t.Errorf("replaced, but not for a failed probe: losses %v, probe failures %d", losses.list(), c.Stats().ProbeFailures)
	}
	_ = c.Close()
	assertGroupGone(t, pid)
}

// TestStdioCrashLoop: a server that exits at once on every start makes
// fewer than 10 starts in 10 s; once the crash loop is found, calls fail
// fast with ErrUnavailable and the last stderr lines; once the server comes
// good, it is used again.
func TestStdioCrashLoop(t *testing.T) {
	crashIf := filepath.Join(t.TempDir(), "crash")
	if err := os.WriteFile(crashIf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var starts sync.Map
	var nstarts atomicCount
	obs := observerFunc(func(ev observe.Event) {
		if ps, ok := ev.(observe.ProcessStarted); ok {
			starts.Store(ps.PID, time.Now())
			nstarts.add()
		}
	})
	c, _ := newClient(t, []string{"STDIOSERVER_CRASH_IF=" + crashIf},
		client.WithBackOff(retry.DefaultBackOff), client.WithObserver(obs))
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := call(ctx, c, "echo", map[string]any{"text": "x"})
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("first call: %v; want ErrUnavailable", err)
	}
	t.Logf("first call failed after %v: %v", time.Since(began), err)
	// The crash loop is found when a restart more than the limit is
	// wanted: after 6 starts and the 6 pauses of the backoff between them
	// (2.6 s ± 20% by default), and the starts' own time, which a loaded
	// machine stretches. So it may be found before the first call's 3 s
	// deadline or after it (the call then fails for want of a session,
	// with the last exit): wait for it, rather than assume it.
	for i := 0; !c.Stats().FailingFast; i++ {
		if i == 1000 {
			t.Fatalf("no crash loop found after %v; Stats %+v", time.Since(began), c.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("crash loop found after %v and %d starts", time.Since(began), nstarts.load())
	// Fail fast now, with the stderr tail: refused as crash-looping, well
	// before the call's deadline, not left waiting for the next start.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := time.Now()
	_, err = call(ctx, c, "echo", map[string]any{"text": "x"})
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "configuration missing") {
		t.Fatalf("call while crash-looping: %v; want ErrUnavailable with the stderr tail", err)
	}
	if !strings.Contains(err.Error(), "crash-looping") || ctx.Err() != nil {
		t.Errorf("a call while crash-looping: %v after %v; want it refused at once as crash-looping", err, time.Since(at))
	}
	var pe *client.ProcessExitError
	if !errors.As(err, &pe) || pe.Exit.Code != 3 {
		t.Errorf("errors.As ProcessExitError: %v", pe)
	}
	if st := c.Stats(); !st.FailingFast || st.LastExit.Code != 3 || len(st.LastExit.StderrTail) != 2 {
		t.Errorf("Stats while crash-looping: FailingFast %v, LastExit %+v", st.FailingFast, st.LastExit)
	}
	for time.Since(began) < 10*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	n := nstarts.load()
	t.Logf("%d starts in 10s; Stats %+v", n, c.Stats().LastExit)
	if n >= 10 {
		t.Errorf("%d starts in 10 s; want fewer than 10", n)
	}
	// It comes good: used again, within a step of the backoff.
	if err := os.Remove(crashIf); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	deadline := time.Now().Add(25 * time.Second)
	for {
		got, err := call(ctx2, c, "echo", map[string]any{"text": "good"})
		if err == nil && got == "good" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server that came good is not used: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type atomicCount struct {
	mu sync.Mutex
	n  int
}

func (a *atomicCount) add() { a.mu.Lock(); a.n++; a.mu.Unlock() }
func (a *atomicCount) load() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// observerFunc is an Observer of events only.
type observerFunc func(observe.Event)

func (f observerFunc) StartCall(ctx context.Context, _ observe.CallInfo) context.Context { return ctx }
func (f observerFunc) StartAttempt(ctx context.Context, _ observe.AttemptInfo) context.Context {
	return ctx
}
func (f observerFunc) EndAttempt(context.Context, observe.AttemptEnd) {}
func (f observerFunc) EndCall(context.Context, observe.CallEnd)       {}
func (f observerFunc) HandleEvent(_ observe.Server, ev observe.Event) { f(ev) }

// TestStdioCloseEndsTheGroup: Close ends the whole process group, a shell
// leader, a server that ignores SIGTERM and stays after stdin ends, and a
// grandchild started through a shell that ignores SIGTERM and holds the
// pipes; nothing of the group is left, and no zombie.
func TestStdioCloseEndsTheGroup(t *testing.T) {
	log := filepath.Join(t.TempDir(), "ran.log")
	c, err := client.NewStdio("/bin/sh", []string{"-c", serverBin + "; echo server exited >&2"},
		client.WithStdioEnv("STDIOSERVER_LOG="+log, "STDIOSERVER_GRANDCHILD=1", "STDIOSERVER_IGNORE_TERM=1"),
		client.WithStdioStopTimeout(200*time.Millisecond), client.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid := pidOf(t, c) // the server, the shell's child
	leader := c.Stats().PID
	if leader == pid {
		t.Fatalf("the shell exec'd the server: no grandchild to test")
	}
	began := time.Now()
	_ = c.Close()
	t.Logf("Close took %v", time.Since(began))
	assertGroupGone(t, leader)
	if err := syscall.Kill(pid, 0); err == nil {
		if state := procState(pid); state != "Z" {
			t.Errorf("the server %d is alive after Close (state %s)", pid, state)
		}
	}
}

// TestStdioEnvironment: the process gets only the harmless variables of
// the agent's environment, and what WithStdioEnv passes.
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("RESILIENTMCP_TEST_SECRET", "s3cr3t")
	out := filepath.Join(t.TempDir(), "env")
	c, err := client.NewStdio("/bin/sh", []string{"-c", "env > " + out + "; exec " + serverBin},
		client.WithStdioEnv("PASSED=yes"), client.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pidOf(t, c)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	if strings.Contains(env, "s3cr3t") || !strings.Contains(env, "PASSED=yes") || !strings.Contains(env, "PATH=") {
		t.Errorf("environment of the server:\n%s", env)
	}
}

// TestStdioGarbageOnStdout: lines on stdout that are not JSON-RPC are
// skipped and counted, never a crash.
func TestStdioGarbageOnStdout(t *testing.T) {
	c, _ := newClient(t, []string{"STDIOSERVER_GARBAGE=1"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		if got, err := call(ctx, c, "echo", map[string]any{"text": "ok"}); err != nil || got != "ok" {
			t.Fatalf("echo = %q, %v", got, err)
		}
	}
	st := c.Stats()
	if st.StdoutSkipped != 2 || st.Restarts != 0 {
		t.Errorf("StdoutSkipped %d, Restarts %d; want 2 and 0", st.StdoutSkipped, st.Restarts)
	}
}

// sigstop stops pid with SIGSTOP and returns once every thread of it is
// stopped. kill returns once the signal is queued; a thread of the process
// acts on it, and stops the others, only when it next runs, which on a
// loaded machine can be tens of milliseconds later: meanwhile the
// process's other threads still read and answer requests (a Go server
// answered a tools/list sent after kill returned).
func sigstop(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var running []string
	for range 2000 { // 10 s at most
		running = running[:0]
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		if err != nil {
			t.Fatalf("SIGSTOP %d: %v", pid, err)
		}
		for _, task := range tasks {
			if st := procState(atoi(task.Name())); st != "T" && st != "t" && st != "" {
				running = append(running, task.Name()+":"+st)
			}
		}
		if len(running) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("SIGSTOP %d: threads not stopped after 10 s: %v", pid, running)
}

// lossRecorder is an observer that keeps why each session was lost.
type lossRecorder struct {
	mu      sync.Mutex
	reasons []observe.LossReason
}

func (r *lossRecorder) observer() client.Option {
	return client.WithObserver(observerFunc(func(ev observe.Event) {
		if l, ok := ev.(observe.SessionLost); ok {
			r.mu.Lock()
			r.reasons = append(r.reasons, l.Reason)
			r.mu.Unlock()
		}
	}))
}

// list is the reasons of the losses so far.
func (r *lossRecorder) list() []observe.LossReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observe.LossReason(nil), r.reasons...)
}

// unhealthy reports whether a session was lost for failing its probe.
func (r *lossRecorder) unhealthy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, why := range r.reasons {
		if why == observe.LossUnhealthy {
			return true
		}
	}
	return false
}

// procState is the state of the task pid in /proc ("R", "S", "T", "Z"...),
// "" if there is none: a thread id names its task there too.
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+2:])[0]
}

// TestStdioSubscriptionResumesAfterRestart: a subscription made on one
// process is made again on the next after a crash, and its notifications
// come again, with no call made.
func TestStdioSubscriptionResumesAfterRestart(t *testing.T) {
	c, _ := newClient(t, nil)
	updates := make(chan int, 1024)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			select {
			case updates <- 1:
			default:
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.SubscribeRequest{}
	req.Params.URI = "test://thing"
	if err := c.Subscribe(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitUpdate := func(what string) {
		t.Helper()
		select {
		case <-updates:
		case <-ctx.Done():
			t.Fatalf("no update %s", what)
		}
	}
	waitUpdate("after subscribing")
	pid := c.Stats().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Updates of the old process drained; then a new one's must come.
	for c.Stats().Restarts == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	for len(updates) > 0 {
		<-updates
	}
	waitUpdate("after the restart")
	if newPID := c.Stats().PID; newPID == pid || newPID == 0 {
		t.Fatalf("PID %d, was %d", newPID, pid)
	}
}

// TestStdioPoolOfProcesses: WithPoolSize(2) runs two processes of the
// command; one killed is replaced on its own while the other serves.
func TestStdioPoolOfProcesses(t *testing.T) {
	c, _ := newClient(t, nil, client.WithPoolSize(2))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				// A slow read-only call, so that both members are leased.
				if _, err := call(ctx, c, "echo", map[string]any{"ms": 20}); err != nil {
					t.Error(err)
					return
				}
				pid, err := call(ctx, c, "pid", nil)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				pids[pid] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(pids) != 2 {
		t.Fatalf("calls went to %d processes; want 2", len(pids))
	}
	for pid := range pids {
		_ = syscall.Kill(atoi(pid), syscall.SIGKILL)
		break
	}
	for range 5 {
		if _, err := call(ctx, c, "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; (c.Stats().Restarts == 0 || c.Stats().Sessions < 2) && i < 100; i++ {
		time.Sleep(50 * time.Millisecond) // the restart is the pool's, in the background
	}
	if st := c.Stats(); st.Restarts != 1 || st.Sessions != 2 {
		t.Errorf("Restarts %d, Sessions %d; want 1 and 2", st.Restarts, st.Sessions)
	}
}

// TestStdioIdleStop: with WithIdleStop the process stops after a period
// with no call, leaving nothing of its group, and the next call starts
// another, which is no restart; a subscription keeps it running.
func TestStdioIdleStop(t *testing.T) {
	const idle = 200 * time.Millisecond
	c, _ := newClient(t, nil, client.WithIdleStop(idle))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := pidOf(t, c)
	for i := 0; c.Stats().PID != 0 && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if pid := c.Stats().PID; pid != 0 {
		t.Fatalf("process %d still running after %v idle", pid, 2*time.Second)
	}
	assertGroupGone(t, first)
	if st := c.State(); st != client.Idle {
		t.Errorf("State %v after the idle stop; want Idle", st)
	}
	second := pidOf(t, c)
	if second == first || c.Stats().Restarts != 0 {
		t.Fatalf("after the idle stop: pid %d (was %d), Restarts %d; want a new process and no restart", second, first, c.Stats().Restarts)
	}
	// A subscription keeps it.
	req := mcp.SubscribeRequest{}
	req.Params.URI = "test://kept"
	if err := c.Subscribe(ctx, req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * idle)
	if pid := c.Stats().PID; pid != second {
		t.Fatalf("process %d with a subscription; want %d still running", pid, second)
	}
}

// TestStdioCommandNotFound: a command that cannot be started fails the
// call at once with ErrUnavailable, saying why, and is no retry storm.
func TestStdioCommandNotFound(t *testing.T) {
	c, err := client.NewStdio(filepath.Join(t.TempDir(), "no-such-server"), nil, client.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	for range 3 {
		_, err = call(ctx, c, "echo", nil)
		if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "no-such-server") {
			t.Fatalf("call: %v; want ErrUnavailable naming the command", err)
		}
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("3 calls took %v; want each to fail at once", d)
	}
	if _, err := client.NewStdio("", nil); err == nil {
		t.Error("NewStdio with no command: no error")
	}
	if _, err := client.New("http://127.0.0.1:1/mcp", client.WithStdioEnv("A=b")); err == nil {
		t.Error("New with WithStdioEnv: no error")
	}
	if _, err := client.NewStdio("true", nil, client.WithHeaders(map[string]string{"A": "b"})); err == nil {
		t.Error("NewStdio with WithHeaders: no error")
	}
}

// TestStdioDir: WithStdioDir is the process's working directory.
func TestStdioDir(t *testing.T) {
	dir := t.TempDir()
	c, err := client.NewStdio("/bin/sh", []string{"-c", "pwd > where; exec " + serverBin}, client.WithStdioDir(dir), client.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pidOf(t, c)
	b, err := os.ReadFile(filepath.Join(dir, "where"))
	if err != nil || strings.TrimSpace(string(b)) != dir {
		t.Fatalf("working directory %q, %v; want %s", b, err, dir)
	}
}

// TestStdioIdleClientGoroutines: an idle stdio client (its process
// running, no call in flight) costs the goroutines of mcp-go's own stdio
// client and one more: the reaper that waits for the process (mcp-go's
// client has none, and learns of an exit only from its stdout). The count
// is BENCHMARKS.md's.
func TestStdioIdleClientGoroutines(t *testing.T) {
	settle := func() int {
		time.Sleep(100 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	base := settle()
	raw, err := mcpclient.NewStdioMCPClient(serverBin, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := raw.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	rawCost := settle() - base
	_ = raw.Close()
	base = settle()
	c, _ := newClient(t, nil)
	pidOf(t, c)
	ours := settle() - base
	t.Logf("idle goroutines: mcp-go's stdio client %d, ResilientClient over stdio %d", rawCost, ours)
	if ours > rawCost+1 {
		t.Errorf("an idle stdio client costs %d goroutines; mcp-go's %d, and one more is the reaper's", ours, rawCost)
	}
}

// TestStdioStdoutClosedIsALostSession: a process that closes its stdout
// and stays is a lost session: the call in flight (not safe to repeat) is
// ErrOutcomeUnknown, the process is ended, and the next call is answered by
// a new one.
func TestStdioStdoutClosedIsALostSession(t *testing.T) {
	c, _ := newClient(t, nil)
	first := pidOf(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := call(ctx, c, "close_stdout", nil); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("close_stdout: %v; want ErrOutcomeUnknown", err)
	}
	if second := pidOf(t, c); second == first {
		t.Fatalf("answered by %d, the process that closed its stdout", second)
	}
	assertGroupGone(t, first)
}

// TestStdioLineOverTheLimit: an answer on a stdout line longer than
// WithMaxResponseBytes is read no further than the limit: its call fails
// with ErrResponseTooLarge (and ErrOutcomeUnknown: it ran) and is not sent
// again, and the process stays in service. A line that never ends and is
// no answer (its id unread by the limit) ends the process's session.
func TestStdioLineOverTheLimit(t *testing.T) {
	c, _ := newClient(t, nil, client.WithMaxResponseBytes(64<<10))
	first := pidOf(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := call(ctx, c, "big", map[string]any{"bytes": 1 << 20})
	if !errors.Is(err, client.ErrResponseTooLarge) || !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("big: %v; want ErrResponseTooLarge and ErrOutcomeUnknown", err)
	}
	if got, err := call(ctx, c, "big", map[string]any{"bytes": 1000}); err != nil || len(got) != 1000 {
		t.Fatalf("big under the limit: %d bytes, %v", len(got), err)
	}
	if pid := c.Stats().PID; pid != first || c.Stats().Retries != 0 {
		t.Fatalf("after an answer over the limit: PID %d (was %d), %d retries; want the same process, no retry", pid, first, c.Stats().Retries)
	}
	if _, err := call(ctx, c, "endless", nil); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("endless: %v; want ErrOutcomeUnknown", err)
	}
	if second := pidOf(t, c); second == first {
		t.Fatal("the process that wrote an endless line is still in service")
	}
	assertGroupGone(t, first)
}

// TestStdioInitializeFirst: a user of mcp-go calls Initialize first; it
// starts the one process, which the calls after it use.
func TestStdioInitializeFirst(t *testing.T) {
	c, _ := newClient(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil || res.ServerInfo.Name != "stdioserver" {
		t.Fatalf("Initialize: %v, %v", res, err)
	}
	pid := c.Stats().PID
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.PID != pid || st.Restarts != 0 || st.SessionsOpened != 1 {
		t.Errorf("after Initialize and a call: PID %d (was %d), Restarts %d, SessionsOpened %d; want one process", st.PID, pid, st.Restarts, st.SessionsOpened)
	}
}

// TestStdioSchemasAsTheServerSentThem: a tool's schemas reach the caller
// over stdio as over HTTP, every keyword kept ($schema, $anchor, allOf,
// if/then/else...), where mcp-go's typed schema would drop them.
func TestStdioSchemasAsTheServerSentThem(t *testing.T) {
	c, _ := newClient(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "shape" {
			continue
		}
		for _, s := range []struct {
			name      string
			got, sent string
		}{
			{"inputSchema", string(tool.RawInputSchema), testserver.ShapeInputSchema},
			{"outputSchema", string(tool.RawOutputSchema), testserver.ShapeOutputSchema},
		} {
			var got, sent any
			if err := json.Unmarshal([]byte(s.got), &got); err != nil {
				t.Errorf("shape's %s as the caller sees it: %q is not the server's raw schema: %v", s.name, s.got, err)
				continue
			}
			_ = json.Unmarshal([]byte(s.sent), &sent)
			if !reflect.DeepEqual(got, sent) {
				t.Errorf("shape's %s = %s\nwant the server's %s", s.name, s.got, s.sent)
			}
		}
		return
	}
	t.Fatal("the server listed no tool shape")
}

// checkKilledUnderLoad is what the callers of a server killed under their
// calls must have seen: every safe call answered, every failure of the
// others ErrOutcomeUnknown or ErrUnavailable, and no unsafe call run
// (or sent, as counted says) twice.
func checkKilledUnderLoad(t *testing.T, safeFailed, unsafeFailed []error, counted map[string]int, how string) {
	t.Helper()
	for _, err := range safeFailed {
		t.Errorf("a safe call failed: %v", err)
	}
	for _, err := range unsafeFailed {
		if !errors.Is(err, client.ErrOutcomeUnknown) && !errors.Is(err, client.ErrUnavailable) {
			t.Errorf("an untyped failure: %v", err)
		}
	}
	for id, n := range counted {
		if n > 1 {
			t.Errorf("%s %s %d times", id, how, n)
		}
	}
}
