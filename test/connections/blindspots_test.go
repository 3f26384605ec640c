package connections

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Each test in this file guards one mechanism that a reviewer removed on
// purpose while every other test stayed green (issue 19, item 5): it fails
// when the mechanism is gone.

// The retry budget caps retries across goroutines: a server that declines
// every call (503, nothing run) sees about 1.2 times the calls plus the
// reserve, not the calls times the retries each call's deadline allows.
// The budget is the default (retry.DefaultBudget): 20% of the calls,
// a reserve of 100, refilled at 10 a second.
func TestRetryBudgetCapsRetriesOfManyFailingCalls(t *testing.T) {
	begun := time.Now()
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false,
		client.WithKeepAlive(0),
		// Pauses short enough that, without a budget, every call would
		// spend its whole deadline retrying.
		client.WithBackOff(func() backoff.BackOff { return backoff.NewConstantBackOff(10 * time.Millisecond) }))
	r.Start()
	r.MustEcho("warm")
	sentBefore := r.Srv.RPCs("tools/call")
	r.Srv.FailPOSTs(1<<30, 503, "", false, "tools/call")

	const calls, workers = 200, 20
	var (
		mu       sync.Mutex
		failures = map[string]int{}
		wg       sync.WaitGroup
		next     = make(chan int, calls)
	)
	for i := range calls {
		next <- i
	}
	close(next)
	for range workers {
		wg.Go(func() {
			for range next {
				// Each call ends when the budget refuses its retry, long
				// before the rig's bound. A short deadline of its own would
				// be a wall clock: on a loaded machine (-race, load 8-12 on
				// 2 cores) it passed with requests in flight, whose
				// callers are rightly told they may have run.
				_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "declined"})
				kind := "ok"
				switch {
				case errors.Is(err, client.ErrUnavailable):
					kind = "unavailable"
				case errors.Is(err, client.ErrOutcomeUnknown):
					kind = "outcome unknown"
				case err != nil:
					kind = "other: " + err.Error()
				}
				mu.Lock()
				failures[kind]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begun)
	r.Srv.FailPOSTs(0, 0, "", false)

	if failures["unavailable"] != calls {
		t.Errorf("callers saw %v; want every call ErrUnavailable (503: nothing ran)", failures)
	}
	if runs := r.Srv.ToolRuns("echo"); runs != 1 {
		t.Errorf("echo ran %d times, want only the warm-up's", runs)
	}
	sent := r.Srv.RPCs("tools/call") - sentBefore
	retries := sent - calls
	// What the budget can have paid for: 20% of every call the client
	// made, the reserve of 100, and its refill for the time the test ran.
	allowed := int64(0.2*float64(r.C.Stats().Calls)+100+10*elapsed.Seconds()) + 1
	t.Logf("%d calls sent %d requests in %v: %d retries, the budget allows %d; stats %+v", calls, sent, elapsed.Round(time.Millisecond), retries, allowed, r.C.Stats())
	if retries > allowed {
		t.Errorf("%d retries reached the server for %d calls that all failed; the retry budget allows at most %d", retries, calls, allowed)
	}
	r.MustEcho("after")
}

// When a request fails on a connection that died silently (a NAT or load
// balancer forgot the flows, a server host rebooted: no FIN, so nothing
// tells the client before it writes), its idle siblings died with it. The
// client drops them all after the first failure, so only one call meets a
// dead connection; the next go out on fresh ones.
func TestDeadConnectionTakesItsIdleSiblingsWithIt(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true, client.WithKeepAlive(0))
	r.Start()
	r.ListTools()

	// Concurrent calls leave several keep-alive connections idle in the
	// HTTP client.
	const conns = 6
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			if _, err := rig.CallTool(r.Ctx(), r.C, "slow", map[string]any{"ms": 100}); err != nil {
				t.Errorf("slow: %v", err)
			}
		})
	}
	wg.Wait()
	if open := r.Proxy.Open(); open < conns {
		t.Fatalf("%d connections open after %d concurrent calls; want at least %d idle ones to break", open, conns, conns)
	}

	r.Proxy.DropAll()
	var failed []error
	for range conns {
		if err := r.Increment(); err != nil {
			failed = append(failed, err)
		}
	}
	for _, err := range failed {
		if !errors.Is(err, client.ErrOutcomeUnknown) {
			t.Errorf("increment after the connections died: %v; want ErrOutcomeUnknown", err)
		}
	}
	if len(failed) != 1 {
		t.Errorf("%d of %d sequential calls met a dead pooled connection; want 1: after the first, the idle ones must be dropped. errors: %v", len(failed), conns, failed)
	}
	if s := r.C.Stats(); s.OutcomeUnknown != 1 {
		t.Errorf("Stats().OutcomeUnknown = %d, want 1", s.OutcomeUnknown)
	}
	if runs := r.Srv.ToolRuns("increment"); runs != int64(conns-len(failed)) {
		t.Errorf("increment ran %d times; %d calls succeeded", runs, conns-len(failed))
	}
}

// A keepalive probe that fails on a pooled connection the far side dropped
// while idle is tried once more on a fresh connection: the session is kept,
// no probe failure is counted and nothing is re-opened.
func TestProbeOnADeadPooledConnectionIsRetriedOnAFreshOne(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, true, client.WithKeepAlive(150*time.Millisecond))
			r.Start()
			id := r.C.GetSessionId()
			// The first probe comes at a random phase of the interval; the
			// next ones an interval (±10%) after the last sign of life.
			rig.Eventually(t, "the first keepalive probe", func() bool { return r.C.Stats().Probes > 0 })
			for round := range 3 {
				// Dropped just after a call, so that the next probe comes an
				// interval later, with no probe in flight at the drop, and
				// goes out on the dead connection.
				r.MustEcho("before the drop")
				probes, accepted := r.C.Stats().Probes, r.Proxy.Accepted()
				r.Proxy.DropAll()
				rig.Eventually(t, "a keepalive probe after the drop", func() bool { return r.C.Stats().Probes > probes })
				if r.Proxy.Accepted() == accepted {
					t.Fatalf("round %d: no new connection after the drop: the probe did not meet the dead one", round)
				}
				if s := r.C.Stats(); s.ProbeFailures != 0 || s.Redials != 0 || s.Reinitializations != 0 {
					t.Fatalf("round %d: stats %+v: the probe met the dropped connection and failed; want it retried on a fresh connection, the session kept", round, s)
				}
			}
			r.MustEcho("after")
			if got := r.C.GetSessionId(); got != id {
				t.Errorf("session id %q after the drops, want %q", got, id)
			}
			if n := r.Srv.RPCs("initialize"); era == testserver.SessionEra && n != 1 {
				t.Errorf("server saw %d initialize, want 1", n)
			}
		})
	}
}
