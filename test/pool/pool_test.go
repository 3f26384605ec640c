package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/retry"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// hammer runs goroutines × calls echo calls with unique texts and returns
// the errors, including answers that were not the call's own.
func hammer(c *client.ResilientClient, goroutines, calls int, done *atomic.Int64) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				want := fmt.Sprintf("g%d-%d", g, i)
				got, err := rig.CallTool(ctx, c, "echo", map[string]any{"text": want})
				cancel()
				if err == nil && got != want {
					err = fmt.Errorf("echo %q answered %q", want, got)
				}
				done.Add(1)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// 256 goroutines share a pool of 4 sessions while the server restarts twice
// and every connection is reset once. Every call gets its own answer, and a
// restart costs each session at most one re-initialization.
func TestPoolSharedByManyGoroutinesThroughRestartsAndResets(t *testing.T) {
	const goroutines, calls, sessions = 256, 50, 4
	// Five attempts, not the default three: through a plain user transport
	// (the proxy's dialer), two restarts and a reset can leave dead pooled
	// connections that one call draws in a row; with three, about 1 call in
	// 90,000 ran out of attempts (ErrOutcomeUnknown for a safe call, never
	// a wrong answer). The closing note of issue 10 has it as open work.
	//
	// A retry budget of its own: each disturbance fails up to one call per
	// goroutine, sometimes twice, all paid from the budget, and the default
	// one holds a fifth of the last 10 s of calls plus 100. On a loaded CI
	// machine (about 200 calls a second) that fell short of 256 retries and
	// a few calls ended "retry budget exhausted"; the budget's own limits are
	// TestRetryBudgetIsSharedByTheClientsGivenIt's and retry's business.
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true, client.WithPoolSize(sessions), client.WithMaxAttempts(5),
		client.WithRetryBudget(retry.NewBudget(10*time.Second, 100, 0.2)))
	r.Start()
	var done atomic.Int64
	result := make(chan []error)
	go func() { result <- hammer(r.C, goroutines, calls, &done) }()

	total := int64(goroutines * calls)
	for i, disturb := range []func() error{
		r.Srv.Restart,
		func() error { r.Proxy.ResetAll(); return nil },
		r.Srv.Restart,
	} {
		at := total * int64(i+1) / 5
		rig.Eventually(t, fmt.Sprintf("%d calls done", at), func() bool { return done.Load() >= at })
		if err := disturb(); err != nil {
			t.Fatal(err)
		}
	}
	errs := <-result
	for i, err := range errs {
		if i < 5 {
			t.Errorf("call failed: %v", err)
		}
	}
	if len(errs) > 0 {
		t.Fatalf("%d of %d calls failed", len(errs), total)
	}
	s := r.C.Stats()
	t.Logf("stats %+v", s)
	// A restart may be met as a 404 (re-initialization) or, by the probe
	// before a replay, as a dead connection (redial); the reset adds up to
	// one redial per session.
	if n := s.Reinitializations + s.Redials; n > 3*sessions || n < 2 {
		t.Errorf("%d new sessions for 2 restarts and a reset of %d sessions, want between 2 and %d", n, sessions, 3*sessions)
	}
	// A member replaced near the end may still be re-initializing.
	rig.Eventually(t, fmt.Sprintf("%d sessions in service", sessions), func() bool { return r.C.Stats().Sessions == sessions })
	if runs := r.Srv.ToolRuns("echo"); runs < total {
		t.Errorf("the server ran echo %d times for %d calls", runs, total)
	}
}

// One session of four gets stuck: the server holds its requests forever.
// Calls routed to the other sessions go on; the stuck one is detected by
// keepalive and replaced, and the calls it held are sent again elsewhere.
func TestStuckSessionDoesNotStallTheOthers(t *testing.T) {
	// A probe gets 1s, not the default half interval (50ms): on a loaded
	// machine 50ms failed the probes of healthy sessions too, and their
	// redials were taken for the stuck one's.
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false,
		client.WithPoolSize(4), client.WithKeepAlive(100*time.Millisecond), client.WithKeepAliveTimeout(time.Second))
	r.Start()
	rig.Eventually(t, "4 sessions", func() bool { return r.C.Stats().Sessions == 4 })
	ids := r.Srv.SessionIDs()
	r.Srv.StallSession(ids[0])

	var done atomic.Int64
	var doneBeforeReplacement atomic.Int64
	stop := make(chan struct{})
	go func() {
		defer close(stop)
		for range 4000 {
			if r.C.Stats().Redials > 0 {
				doneBeforeReplacement.Store(done.Load())
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	errs := hammer(r.C, 32, 20, &done)
	<-stop
	for i, err := range errs {
		if i < 5 {
			t.Errorf("call failed: %v", err)
		}
	}
	s := r.C.Stats()
	t.Logf("%d calls done before the stuck session was replaced; stats %+v", doneBeforeReplacement.Load(), s)
	if s.Redials < 1 {
		t.Fatalf("the stuck session was not replaced: %+v", s)
	}
	if doneBeforeReplacement.Load() < 32 {
		t.Errorf("only %d calls completed while one session was stuck: the others were stalled too", doneBeforeReplacement.Load())
	}
}

// Close with calls in flight on every member of a pool: they all end with
// ErrClosed, and TestMain's goleak finds nothing left running.
func TestPoolCloseWithCallsInFlight(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false, client.WithPoolSize(4))
	r.Start()
	// The first call returns as soon as one member is ready; the other
	// three finish dialling in the background.
	rig.Eventually(t, "4 sessions open", func() bool { return r.C.Stats().Sessions == 4 })
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			_, err := rig.CallTool(context.Background(), r.C, "slow", map[string]any{"ms": 10000})
			errs <- err
		}()
	}
	rig.Eventually(t, "16 slow calls in flight", func() bool { return r.Srv.RPCs("tools/call") == 16 })
	if s := r.C.Stats(); s.InFlight != 16 || s.Sessions != 4 {
		t.Fatalf("stats %+v: want 16 calls in flight over 4 sessions", s)
	}
	r.C.Close()
	for range 16 {
		if err := <-errs; !errors.Is(err, client.ErrClosed) {
			t.Errorf("call in flight at Close = %v, want ErrClosed", err)
		}
	}
}
