package restarts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F1: the server restarts and forgets the session; the next calls succeed
// through one re-initialization, and a non-idempotent call rejected with 404
// (so never run) is replayed and runs exactly once.
func TestF1RestartedServerIsReinitializedOnce(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
	r.Start()
	r.MustEcho("before")
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("after")
	if err := r.Increment(); err != nil {
		t.Fatalf("increment after restart: %v", err)
	}
	if runs := r.Srv.ToolRuns("increment"); runs != 1 {
		t.Errorf("increment ran %d times, want 1", runs)
	}
	if s := r.C.Stats(); s.Reinitializations != 1 || s.Replays < 1 {
		t.Errorf("stats %+v: want 1 re-initialization and a replay", s)
	}
	if got := r.Srv.RPCs("initialize"); got != 2 {
		t.Errorf("server saw %d initialize requests, want 2", got)
	}
	// A 404 proves the call did not run: no tool annotations are needed.
	if got := r.Srv.RPCs("tools/list"); got != 0 {
		t.Errorf("server saw %d tools/list, want none", got)
	}
}

// F2: the request reached the server, ran, and the answer was lost (the
// connection closed with no response). A read-only tool is replayed; a
// non-idempotent one is not, and the caller is told the outcome is unknown.
//
// The decision is the same whether or not the caller listed tools: the
// client lists them itself, once, when the first decision needs them.
func TestF2LostAnswerIsReplayedOnlyWhenSafe(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			rig.BothWays(t, func(t *testing.T, listFirst bool) {
				logs := &rig.LogRecorder{}
				r := rig.New(t, testserver.Config{Era: era}, false, client.WithLogger(logs.Logger()))
				r.Start()
				if listFirst {
					r.ListTools()
				}
				r.MustEcho("a call that succeeds needs no annotations")
				if n := r.ToolLists(listFirst); n != 0 {
					t.Errorf("%d tools/list on the success path, want none", n)
				}

				r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
				err := r.Increment()
				if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, io.EOF) || errors.Is(err, client.ErrUnavailable) {
					t.Fatalf("increment = %v; want ErrOutcomeUnknown wrapping io.EOF", err)
				}
				if runs := r.Srv.ToolRuns("increment"); runs != 1 {
					t.Errorf("increment ran %d times, want exactly 1", runs)
				}
				if !logs.Has(slog.LevelWarn, "replay refused", "tool", "increment") {
					t.Errorf("no warning names the refused replay of increment; logged:\n%s", logs)
				}

				r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
				r.MustEcho("replayed")
				if runs := r.Srv.ToolRuns("echo"); runs != 3 {
					t.Errorf("echo ran %d times, want 3 (one, the lost one and the replay)", runs)
				}
				want := int64(1)
				switch {
				case era == testserver.StatelessEra:
					// Sessionless: each lost answer leaves the server's
					// identity in doubt, and the tools are listed again
					// before the replay decision (policy.Reidentify).
					want = 2
				case listFirst:
					want = 0
				}
				if n := r.ToolLists(listFirst); n != want {
					t.Errorf("the client listed tools %d times, want %d", n, want)
				}
				if s := r.C.Stats(); s.OutcomeUnknown != 1 || s.Unavailable != 0 {
					t.Errorf("stats %+v: want one call counted OutcomeUnknown", s)
				}
			})
		})
	}
}

// 32 goroutines lose their answers at once; each call's replay decision
// needs the annotations, and one tools/list serves them all.
//
// The injected failures hit requests in arrival order, replays included, so
// a call may draw several: the calls get attempts enough to outlast them all.
// A server with sessions: a sessionless one has its tools listed again
// after every loss that a request sent since the last doubt meets
// (policy.Reidentify), replays included.
func TestLearnedAnnotationsAreListedOnceForAllGoroutines(t *testing.T) {
	const goroutines = 32
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false, client.WithMaxAttempts(goroutines+1))
	r.Start()
	r.Srv.FailPOSTs(goroutines, 0, "", true, "tools/call")
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			want := fmt.Sprint("g", g)
			got, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": want})
			if err == nil && got != want {
				err = fmt.Errorf("echo %q answered %q", want, got)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := r.Srv.RPCs("tools/list"); n != 1 {
		t.Errorf("server saw %d tools/list for %d calls needing annotations, want 1", n, goroutines)
	}
}

// F2 by a real restart: safe calls succeed; a non-idempotent call either
// succeeds or reports ErrOutcomeUnknown, and never runs twice.
//
// It rarely fails at all: the default HTTP client checks that a pooled
// connection is still open before writing on it, so a call that meets a
// connection the old server closed goes out on a new one instead. Without
// the check about 4 in 10 report ErrOutcomeUnknown for a call that never ran
// (BenchmarkUnsafeCallAfterRestart).
func TestF2RestartNeverRunsAnUnsafeCallTwice(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			rig.BothWays(t, func(t *testing.T, listFirst bool) {
				r := rig.New(t, testserver.Config{Era: era}, false)
				r.Start()
				if listFirst {
					r.ListTools()
				}
				falseAlarms := 0
				for i := range 10 {
					if err := r.Srv.Restart(); err != nil {
						t.Fatal(err)
					}
					before := r.Srv.ToolRuns("increment")
					err := r.Increment()
					ran := r.Srv.ToolRuns("increment") - before
					switch {
					case err == nil && ran != 1:
						t.Fatalf("restart %d: increment succeeded but ran %d times", i, ran)
					case err != nil && !errors.Is(err, client.ErrOutcomeUnknown):
						t.Fatalf("restart %d: increment = %v; want success or ErrOutcomeUnknown", i, err)
					case ran > 1:
						t.Fatalf("restart %d: increment ran %d times", i, ran)
					case err != nil && ran == 0:
						falseAlarms++
					}
					r.MustEcho(fmt.Sprint("after restart ", i))
				}
				if falseAlarms > 1 {
					t.Errorf("%d of 10 calls that never ran reported ErrOutcomeUnknown", falseAlarms)
				}
			})
		})
	}
}

// F7: the server is unreachable for two seconds. Calls wait within their
// deadlines and succeed when it is back; meanwhile the client tries to
// connect on the backoff schedule, not in a hot loop.
func TestF7OutageWaitsOnTheBackoffSchedule(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, true)
			r.Start()
			r.MustEcho("before")
			dialsBefore := r.Proxy.Dials()
			if err := r.Proxy.SetRefuse(true); err != nil {
				t.Fatal(err)
			}
			const callers = 8
			errs := make(chan error, callers)
			for i := range callers {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
					defer cancel()
					want := fmt.Sprint("waited ", i)
					got, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": want})
					if err == nil && got != want {
						err = fmt.Errorf("got %q, want %q", got, want)
					}
					errs <- err
				}()
			}
			rig.Eventually(t, "Reconnecting", func() bool { return r.C.State() == client.Reconnecting })
			time.Sleep(2 * time.Second)
			dials := r.Proxy.Dials() - dialsBefore
			if err := r.Proxy.SetRefuse(false); err != nil {
				t.Fatal(err)
			}
			for range callers {
				if err := <-errs; err != nil {
					t.Errorf("call during outage: %v", err)
				}
			}
			// The default schedule (100ms ×1.6, ±20%) fits at most seven
			// reconnect attempts in two seconds (the first goes before any
			// pause, then 80+128+205+328+524+839ms at the shortest); each
			// caller's first send may add one more.
			t.Logf("%d connection attempts during the 2s outage with %d callers", dials, callers)
			if dials > callers+7 {
				t.Errorf("%d connection attempts in 2s; the backoff schedule allows %d", dials, callers+7)
			}
			if dials < 4 {
				t.Errorf("only %d connection attempts in 2s: the client stopped trying", dials)
			}
			if st := r.C.State(); st != client.Ready {
				t.Errorf("state %v after the outage, want Ready", st)
			}
			if s := r.C.Stats(); s.Reinitializations != 0 {
				t.Errorf("%d re-initializations: the session outlived a network outage and should have been kept", s.Reinitializations)
			}
		})
	}
}

// F7 and F1 together: the server goes down and comes back as a new process.
// A non-idempotent call made meanwhile provably never reached it (every
// connection was refused), so it waits, and runs exactly once.
func TestF7ServerDownThenBackAsNewProcess(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
	r.Start()
	r.Srv.Stop()
	done := make(chan error, 1)
	go func() { done <- r.Increment() }()
	rig.Eventually(t, "Reconnecting", func() bool { return r.C.State() == client.Reconnecting })
	if err := r.Srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("increment across the outage: %v", err)
	}
	if runs := r.Srv.ToolRuns("increment"); runs != 1 {
		t.Errorf("increment ran %d times, want 1", runs)
	}
	if s := r.C.Stats(); s.Reinitializations != 1 {
		t.Errorf("%d re-initializations, want 1", s.Reinitializations)
	}
}

// A caller whose deadline ends during an outage gets ErrUnavailable, which
// still says why: the deadline, and the connection refused.
func TestF7DeadlineDuringOutageIsUnavailable(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
	r.Start()
	r.Srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": "x"})
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want ErrUnavailable wrapping the deadline", err)
	}
	if runs := r.Srv.ToolRuns("echo"); runs != 0 {
		t.Errorf("echo ran %d times while the server was down", runs)
	}
}

// A call whose context has no deadline gets WithCallTimeout's, whether the
// context is bare (calls share a deadline) or carries values (a deadline of
// its own); it is not sent again after the deadline.
func TestCallTimeoutBoundsCallsWithoutDeadline(t *testing.T) {
	type key struct{}
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false, client.WithCallTimeout(300*time.Millisecond))
	r.Start()
	for name, ctx := range map[string]context.Context{
		"background": context.Background(),
		"with value": context.WithValue(context.Background(), key{}, 1),
	} {
		before := r.Srv.ToolRuns("slow")
		_, err := rig.CallTool(ctx, r.C, "slow", map[string]any{"ms": 5000})
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, client.ErrOutcomeUnknown) {
			t.Errorf("%s: err = %v; want the call timeout's deadline, after sending", name, err)
		}
		if runs := r.Srv.ToolRuns("slow") - before; runs != 1 {
			t.Errorf("%s: slow ran %d times, want once", name, runs)
		}
	}
	r.MustEcho("still works")
}

// F10: 5xx and 429 answers are classified by status.
func TestF10StatusCodes(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false)
			r.Start()

			// 503 and 429 mean "not processed": even a non-idempotent call
			// is sent again, and runs once.
			r.Srv.FailPOSTs(1, http.StatusServiceUnavailable, "", false, "tools/call")
			if err := r.Increment(); err != nil {
				t.Fatalf("increment after a 503: %v", err)
			}
			if runs := r.Srv.ToolRuns("increment"); runs != 1 {
				t.Errorf("increment ran %d times, want 1", runs)
			}

			r.Srv.FailPOSTs(1, http.StatusTooManyRequests, "1", false, "tools/call")
			start := time.Now()
			r.MustEcho("after 429")
			if waited := time.Since(start); waited < time.Second {
				t.Errorf("retried after %v, before the server's Retry-After of 1s", waited)
			}

			// 502 from a proxy after the backend ran it: outcome unknown.
			r.Srv.FailPOSTs(1, http.StatusBadGateway, "", true, "tools/call")
			if err := r.Increment(); !errors.Is(err, client.ErrOutcomeUnknown) {
				t.Fatalf("increment after a 502 = %v; want ErrOutcomeUnknown", err)
			}
			if runs := r.Srv.ToolRuns("increment"); runs != 2 {
				t.Errorf("increment ran %d times in all, want 2 (never twice for one call)", runs)
			}

			// 500: the server failed while handling it, so it may have run;
			// returned at once, not retried, even for a safe call: a retry
			// would most likely meet the same failure.
			calls := r.Srv.RPCs("tools/call")
			r.Srv.FailPOSTs(1, http.StatusInternalServerError, "", false, "tools/call")
			_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "x"})
			if !errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("echo after a 500 = %v; want ErrOutcomeUnknown", err)
			}
			if sent := r.Srv.RPCs("tools/call") - calls; sent != 1 {
				t.Errorf("a 500 was retried: %d tools/call requests", sent)
			}
		})
	}
}

// F11: 401 is a clear error at once, not a retry storm; the right header
// fixes it.
func TestF11AuthorizationRequired(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			cfg := testserver.Config{Era: era, RequireToken: "s3cret"}
			r := rig.New(t, cfg, false)
			req := mcp.InitializeRequest{}
			_, err := r.C.Initialize(r.Ctx(), req)
			var authErr *client.AuthorizationRequiredError
			if !errors.Is(err, client.ErrAuthorizationRequired) || !errors.As(err, &authErr) || authErr.Reason != "no_token" ||
				!errors.Is(err, transport.ErrAuthorizationRequired) {
				t.Fatalf("Initialize = %v; want ErrAuthorizationRequired (no_token), wrapping mcp-go's", err)
			}
			_, err = rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "x"})
			if !errors.Is(err, client.ErrAuthorizationRequired) || errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown) {
				t.Fatalf("CallTool = %v; want ErrAuthorizationRequired alone", err)
			}
			if s := r.C.Stats(); s.AuthorizationRequired != 2 {
				t.Errorf("stats %+v: want 2 calls counted AuthorizationRequired", s)
			}
			if posts := r.Srv.HTTPRequests("POST"); posts > 4 {
				t.Errorf("%d POSTs for two calls refused with 401: retrying what cannot succeed", posts)
			}

			ok := rig.New(t, cfg, false, client.WithHeaders(map[string]string{"Authorization": "Bearer s3cret"}))
			ok.Start()
			ok.MustEcho("authorized")
		})
	}
}

// F12: an endpoint that is not MCP gives a clear error at once.
func TestF12NotAnMCPEndpoint(t *testing.T) {
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc": nope`)
	}))
	defer garbage.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	html, err := testserver.Start(testserver.Config{NotMCP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer html.Close()

	for name, url := range map[string]string{"HTML page": html.URL(), "garbage JSON": garbage.URL + "/mcp", "404": notFound.URL + "/mcp"} {
		t.Run(name, func(t *testing.T) {
			c, err := client.New(url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = c.Initialize(ctx, mcp.InitializeRequest{})
			if err == nil || errors.Is(err, client.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Initialize = %v; want the endpoint's error at once, not a wait", err)
			}
			t.Logf("%s: %v", name, err)
		})
	}
	if posts := html.HTTPRequests("POST"); posts > 2 {
		t.Errorf("%d POSTs to an HTML endpoint, want at most 2 (discover, initialize)", posts)
	}
}

// A session-era server that answers server/discover with an empty result
// must be initialized, not taken for a stateless one.
func TestMalformedDiscoverFallsBackToInitialize(t *testing.T) {
	r := rig.New(t, testserver.Config{MalformedDiscover: true}, false)
	res := r.Start()
	if mcp.IsModernProtocol(res.ProtocolVersion) || mcp.IsModernProtocol(r.C.ProtocolVersion()) {
		t.Fatalf("negotiated %s / %s; want a session-era version", res.ProtocolVersion, r.C.ProtocolVersion())
	}
	if err := r.Increment(); err != nil {
		t.Fatal(err)
	}
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("after restart")
	if runs := r.Srv.ToolRuns("increment"); runs != 1 {
		t.Errorf("increment ran %d times, want 1", runs)
	}
	if s := r.C.Stats(); s.Reinitializations != 1 {
		t.Errorf("%d re-initializations, want 1", s.Reinitializations)
	}
}

// F13: the server changes protocol era across a restart.
func TestF13ServerChangesEraAcrossRestart(t *testing.T) {
	for _, tc := range []struct{ from, to testserver.Era }{
		{testserver.SessionEra, testserver.StatelessEra},
		{testserver.StatelessEra, testserver.SessionEra},
	} {
		t.Run(tc.from.String()+"To"+tc.to.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: tc.from}, false)
			r.Start()
			r.MustEcho("before")
			r.Srv.Reconfigure(testserver.Config{Era: tc.to})
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			r.MustEcho("after")
			if err := r.Increment(); err != nil {
				t.Fatalf("increment on the changed server: %v", err)
			}
			if runs := r.Srv.ToolRuns("increment"); runs != 1 {
				t.Errorf("increment ran %d times, want 1", runs)
			}
			if tc.to == testserver.SessionEra && mcp.IsModernProtocol(r.C.ProtocolVersion()) {
				t.Errorf("still on %s against a session-era server", r.C.ProtocolVersion())
			}
		})
	}
}

// F16: Close interrupts calls in flight and calls waiting for a reconnect;
// every later call gets ErrClosed; nothing leaks (TestMain).
func TestF16CloseDuringCallsAndReconnects(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true)
	r.Start()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			_, err := rig.CallTool(context.Background(), r.C, "slow", map[string]any{"ms": 10000})
			errs <- err
		})
	}
	rig.Eventually(t, "slow calls to reach the server", func() bool { return r.Srv.RPCs("tools/call") == 4 })

	other := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true)
	other.Start()
	if err := other.Proxy.SetRefuse(true); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		wg.Go(func() {
			_, err := rig.CallTool(context.Background(), other.C, "echo", map[string]any{"text": "x"})
			errs <- err
		})
	}
	rig.Eventually(t, "Reconnecting", func() bool { return other.C.State() == client.Reconnecting })

	r.C.Close()
	other.C.Close()
	wg.Wait()
	close(errs)
	sent, waiting := 0, 0
	for err := range errs {
		switch {
		case !errors.Is(err, client.ErrClosed) || errors.Is(err, client.ErrUnavailable):
			t.Errorf("call interrupted by Close = %v; want ErrClosed", err)
		case errors.Is(err, client.ErrOutcomeUnknown):
			sent++ // the slow calls had reached the server
		default:
			waiting++
		}
	}
	if sent != 4 || waiting != 4 {
		t.Errorf("%d interrupted calls said they may have run and %d that they had not; want 4 and 4", sent, waiting)
	}
	if _, err := rig.CallTool(context.Background(), r.C, "echo", map[string]any{"text": "x"}); !errors.Is(err, client.ErrClosed) {
		t.Errorf("call after Close = %v; want ErrClosed", err)
	}
	if err := r.C.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if st := r.C.State(); st != client.Closed {
		t.Errorf("state %v after Close", st)
	}
}

// F9/F1: 64 goroutines share one client while the server restarts three
// times. Every call gets its own answer, and each restart costs exactly one
// new session: a re-initialization if a call met the 404 first, or a redial
// if the probe before a replay met the dying server's connection first.
func TestConcurrentCallsAcrossRestarts(t *testing.T) {
	rig.BothWays(t, concurrentCallsAcrossRestarts)
}

func concurrentCallsAcrossRestarts(t *testing.T, listFirst bool) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
	r.Start()
	if listFirst {
		r.ListTools()
	}
	const goroutines, restarts = 64, 3
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopWorkers := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopWorkers) // before the rig's cleanup closes the client, even if the test fails early
	var mu sync.Mutex
	var failures []error
	calls := 0
	for g := range goroutines {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				want := fmt.Sprintf("g%d-%d", g, i)
				got, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": want})
				sum, err2 := rig.CallTool(ctx, r.C, "add", map[string]any{"a": g, "b": i})
				cancel()
				mu.Lock()
				calls += 2
				if err == nil && got != want {
					err = fmt.Errorf("echo %q answered %q", want, got)
				}
				if err2 == nil && sum != fmt.Sprint(g+i) {
					err2 = fmt.Errorf("add %d+%d answered %s", g, i, sum)
				}
				for _, e := range []error{err, err2} {
					if e != nil {
						failures = append(failures, e)
					}
				}
				mu.Unlock()
			}
		})
	}
	// Each restart fails about one call per goroutine, and every retry is
	// paid from the retry budget: its reserve (100) and a fifth of the calls
	// of the last seconds. A restart therefore waits for the calls that pay
	// for the one before it, not for a time: on a loaded CI machine 300 ms
	// held only 300 calls, and the third restart found the budget spent
	// (that exhaustion is the budget's own tests' business, not this one's).
	callsDone := func() int { mu.Lock(); defer mu.Unlock(); return calls }
	for n := 1; n <= restarts; n++ {
		at := callsDone() + goroutines*8
		rig.Eventually(t, fmt.Sprintf("%d calls done before restart %d", at, n), func() bool { return callsDone() >= at })
		if err := r.Srv.Restart(); err != nil {
			t.Fatal(err)
		}
		rig.Eventually(t, fmt.Sprintf("new session %d", n), func() bool { s := r.C.Stats(); return s.Reinitializations+s.Redials >= uint64(n) })
	}
	time.Sleep(50 * time.Millisecond)
	stopWorkers()
	for i, err := range failures {
		if i < 5 {
			t.Errorf("call failed: %v", err)
		}
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d calls failed", len(failures), calls)
	}
	s := r.C.Stats()
	t.Logf("%d calls, stats %+v", calls, s)
	if s.Reinitializations+s.Redials != restarts {
		t.Errorf("%d re-initializations and %d redials for %d restarts, want exactly one new session each", s.Reinitializations, s.Redials, restarts)
	}
	// A 404 needs no annotations; a connection that died under a call may
	// need them once, and after that each re-initialization lists again.
	if n := r.ToolLists(listFirst); n > restarts+1 {
		t.Errorf("the client listed tools %d times for %d restarts", n, restarts)
	}
}

// The state handler hears every transition in order: the first connect, the
// loss and recovery of the server, and Close.
func TestStateHandlerSeesTransitionsInOrder(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, true, client.WithStateHandler(func(from, to client.State) {
		mu.Lock()
		seen = append(seen, from.String()+">"+to.String())
		mu.Unlock()
	}))
	r.Start()
	if err := r.Proxy.SetRefuse(true); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "x"})
		done <- err
	}()
	rig.Eventually(t, "Reconnecting", func() bool { return r.C.State() == client.Reconnecting })
	if err := r.Proxy.SetRefuse(false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.C.Close()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"Idle>Connecting", "Connecting>Ready", "Ready>Reconnecting", "Reconnecting>Ready", "Ready>Closed"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("transitions %v, want %v", seen, want)
	}
}
