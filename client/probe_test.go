package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// probeRig is a session-era server and a client whose background prober is
// frozen, so that every call after an idle spell is probed first
// (validate-before-use), with the probe's fate in the test's hands.
//
// A probe may take as long as it needs (generousProbeTimeout): the short
// keepalive makes a session idle after a 60ms sleep, but its default
// probe timeout, half of it, would be shorter than a round trip on a
// loaded machine, and a probe that times out replaces the session that
// the test's fault (a busy answer, a 500) was meant to decide.
func probeRig(t *testing.T, opts ...Option) (*testserver.Server, *ResilientClient, context.Context) {
	t.Helper()
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := New(srv.URL(), append([]Option{WithKeepAlive(40 * time.Millisecond), generousProbeTimeout, frozenProber()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return srv, c, ctx
}

func incrementRequest() mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = "increment"
	return req
}

// F29: the probe made before a call fails (500, or the connection dropped
// twice). The call was not sent, so the probe's failure is never its
// outcome: a non-idempotent call goes out on a new session and runs once.
func TestF29AProbesFailureIsNotTheCallsOutcome(t *testing.T) {
	for name, fail := range map[string]func(*testserver.Server){
		"500":                   func(s *testserver.Server) { s.FailPOSTs(1, 500, "", false, "ping") },
		"connection dropped x2": func(s *testserver.Server) { s.FailPOSTs(2, 0, "", false, "ping") },
	} {
		t.Run(name, func(t *testing.T) {
			srv, c, ctx := probeRig(t)
			const calls = 24
			ok := 0
			for i := range calls {
				fail(srv)
				time.Sleep(60 * time.Millisecond) // idle past the interval
				_, err := c.CallTool(ctx, incrementRequest())
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrOutcomeUnknown):
					t.Fatalf("call %d: %v; the call was never sent, only the probe failed", i, err)
				case !errors.Is(err, ErrUnavailable):
					t.Fatalf("call %d: untyped %v", i, err)
				}
			}
			if runs := srv.ToolRuns("increment"); runs != int64(ok) {
				t.Errorf("increment ran %d times for %d successful calls", runs, ok)
			}
			if ok != calls {
				t.Errorf("%d of %d calls succeeded; each could go out on a new session", ok, calls)
			}
			if s := c.Stats(); s.ProbeFailures < calls {
				t.Errorf("stats %+v: want the %d failed probes counted", s, calls)
			}
		})
	}
}

// F30: a probe answered 503 with Retry-After: the server is there and busy.
// The session is kept (no new initialize) and the call waits as asked,
// then goes out on it.
func TestF30BusyProbeKeepsTheSessionAndWaits(t *testing.T) {
	srv, c, ctx := probeRig(t)
	srv.FailPOSTs(1, 503, "1", false, "ping")
	time.Sleep(60 * time.Millisecond)
	start := time.Now()
	if _, err := c.CallTool(ctx, incrementRequest()); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the call went out %v after the busy answer; it asked for 1s", waited)
	}
	if n := srv.RPCs("initialize"); n != 1 {
		t.Errorf("server saw %d initialize requests; the busy session must be kept", n)
	}
	if s := c.Stats(); s.Redials+s.Reinitializations != 0 || s.ProbeFailures != 0 {
		t.Errorf("stats %+v: busy is neither a failed probe nor a lost session", s)
	}
}

// F30 for dials: initialize answered 503 with Retry-After. The dial loop
// waits as asked, not its 100ms backoff.
func TestF30DialHonoursRetryAfter(t *testing.T) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.FailPOSTs(1, 503, "1", false, "initialize")
	c, err := New(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("initialized %v after a 503 asking for 1s", waited)
	}
	if n := srv.RPCs("initialize"); n != 2 {
		t.Errorf("server saw %d initialize requests, want the refused one and one after the pause", n)
	}
}

// F31: a call waits for a probe that stalls (the server holds the
// session's requests). It returns by its own deadline, while the probe is
// still under way, and says it did not run.
func TestF31CallReturnsByItsDeadlineWhileAProbeStalls(t *testing.T) {
	srv, c, ctx := probeRig(t, WithKeepAliveTimeout(time.Minute))
	srv.StallSession(c.GetSessionId())
	time.Sleep(60 * time.Millisecond)
	callCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := c.CallTool(callCtx, incrementRequest())
	probesDone := c.Stats().Probes
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call = %v; want ErrUnavailable and the deadline", err)
	}
	if probesDone != 0 {
		t.Errorf("the call returned after the probe ended (%d probes done); it must not wait past its deadline", probesDone)
	}
	if runs := srv.ToolRuns("increment"); runs != 0 {
		t.Errorf("increment ran %d times; the call was never sent", runs)
	}
}
