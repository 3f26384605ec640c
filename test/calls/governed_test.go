package calls

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Calls governed by the work they report (issue 28): progress-aware
// timeouts, per-call options, failing fast when the server is gone. F34-F36.

// progressLog collects a call's OnProgress notifications, with when each
// arrived.
type progressLog struct {
	mu    sync.Mutex
	got   []mcp.ProgressNotification
	at    []time.Time
	after bool // a notification came after the call returned
	done  bool
}

func (l *progressLog) option() client.CallOption {
	return client.OnProgress(func(n mcp.ProgressNotification) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.done {
			l.after = true
		}
		l.got = append(l.got, n)
		l.at = append(l.at, time.Now())
	})
}

// returned marks the call returned: OnProgress must not be called again.
func (l *progressLog) returned() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

func (l *progressLog) snapshot() ([]mcp.ProgressNotification, []time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got), slices.Clone(l.at), l.after
}

// work is a call of the test server's work tool: n progress reports ms
// apart, silent after stallAfter of them if stallAfter ≥ 0.
func work(n, ms, stallAfter int) mcp.CallToolRequest {
	return rig.ToolRequest("work", map[string]any{"n": n, "ms": ms, "stallAfter": stallAfter})
}

// F34: a tool that runs 5s, reporting progress every 200ms, called with
// ProgressTimeout(1s) and no deadline on a client whose WithCallTimeout is
// 2s: it succeeds, once. Without ProgressTimeout the same call is cut at
// WithCallTimeout, as before.
func TestF34ProgressKeepsALongCallAlive(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false, client.WithCallTimeout(2*time.Second))
			r.Start()
			var log progressLog
			ctx := client.WithCallOptions(context.Background(), client.ProgressTimeout(time.Second), log.option())
			got, err := rig.CallToolRequest(ctx, r.C, work(25, 200, -1))
			log.returned()
			if err != nil || got != "done 25" {
				t.Fatalf("work under ProgressTimeout(1s) = %q, %v; want done 25", got, err)
			}
			if runs := r.Srv.ToolRuns("work"); runs != 1 {
				t.Errorf("work ran %d times, want 1", runs)
			}
			seen, _, after := log.snapshot()
			if len(seen) != 25 || after {
				t.Errorf("OnProgress saw %d notifications (after return: %v), want 25", len(seen), after)
			}
			for i, n := range seen {
				if n.Params.Progress != float64(i+1) {
					t.Fatalf("notification %d has progress %v: out of order", i, n.Params.Progress)
				}
			}

			// The same call without ProgressTimeout keeps WithCallTimeout.
			_, err = rig.CallToolRequest(context.Background(), r.C, work(25, 200, -1))
			if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("work without ProgressTimeout: %v; want WithCallTimeout's deadline after sending", err)
			}
		})
	}
}

// F35: the same tool going silent after 300ms ends about one idle period
// after its last progress, with ErrOutcomeUnknown and DeadlineExceeded; it
// is not sent again, and the server is told: notifications/cancelled with
// the call's request id in the session era (the tool sees its context
// cancelled), the request's stream closed in 2026-07-28.
//
// The client-wide WithProgressTimeout does the same as the call option.
func TestF35StalledCallEndsOneIdlePeriodAfterItsLastProgress(t *testing.T) {
	for _, era := range rig.BothEras {
		for _, clientWide := range []bool{false, true} {
			name := era.String() + "/ProgressTimeout"
			if clientWide {
				name = era.String() + "/WithProgressTimeout"
			}
			t.Run(name, func(t *testing.T) { stalledCall(t, era, clientWide) })
		}
	}
}

func stalledCall(t *testing.T, era testserver.Era, clientWide bool) {
	opts := []client.Option{client.WithCallTimeout(2 * time.Second)}
	if clientWide {
		opts = append(opts, client.WithProgressTimeout(time.Second))
	}
	r := rig.New(t, testserver.Config{Era: era}, false, opts...)
	r.Start()
	var log progressLog
	callOpts := []client.CallOption{log.option()}
	if !clientWide {
		callOpts = append(callOpts, client.ProgressTimeout(time.Second))
	}
	ctx := client.WithCallOptions(context.Background(), callOpts...)
	_, err := rig.CallToolRequest(ctx, r.C, work(25, 100, 3))
	ended := time.Now()
	log.returned()
	var pe *client.ProgressTimeoutError
	if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &pe) || pe.Idle != time.Second {
		t.Fatalf("stalled work: %v; want ErrOutcomeUnknown, DeadlineExceeded and *ProgressTimeoutError{1s}", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("stalled work: %v also says the caller cancelled", err)
	}
	seen, at, _ := log.snapshot()
	if len(seen) != 3 {
		t.Fatalf("OnProgress saw %d notifications, want the 3 before the stall", len(seen))
	}
	idle := ended.Sub(at[len(at)-1])
	t.Logf("the call ended %v after its last progress (ProgressTimeout 1s): %v", idle.Round(time.Millisecond), err)
	// The idle clock is checked by a timer: the call ends at the
	// idle period, plus the timer's and the scheduler's lateness.
	if idle < time.Second-50*time.Millisecond || idle > 2*time.Second {
		t.Errorf("the call ended %v after its last progress; want about 1s", idle)
	}
	rig.Eventually(t, "the tool stopped", func() bool { return r.Srv.ToolRuns("work.cancelled") == 1 })
	if runs := r.Srv.ToolRuns("work"); runs != 1 {
		t.Errorf("work ran %d times, want 1", runs)
	}
	if era == testserver.SessionEra {
		ids := r.Srv.ToolCallIDs()
		rig.Eventually(t, "notifications/cancelled", func() bool { return len(r.Srv.CancelledIDs()) == 1 })
		if got := r.Srv.CancelledIDs(); len(ids) != 1 || got[0] != ids[0] {
			t.Errorf("notifications/cancelled for %v; want the call's id %v", got, ids)
		}
	}
}

// WithMaxCallDuration bounds a call governed by progress that reports
// progress forever: it ends at about that bound, not at a shorter
// WithCallTimeout; a caller's deadline below it wins. A client-wide
// WithProgressTimeout governs calls as the call option does.
func TestMaxCallDurationBoundsACallThatProgressesForever(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false,
				client.WithCallTimeout(500*time.Millisecond), client.WithMaxCallDuration(2*time.Second),
				client.WithProgressTimeout(time.Second))
			r.Start()
			start := time.Now()
			_, err := rig.CallToolRequest(context.Background(), r.C, work(1000, 100, -1))
			took := time.Since(start)
			t.Logf("a call progressing forever ended after %v: %v", took.Round(time.Millisecond), err)
			if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v; want ErrOutcomeUnknown at the deadline", err)
			}
			if errors.As(err, new(*client.ProgressTimeoutError)) {
				t.Errorf("err = %v: it progressed; the bound, not the idle timeout, ended it", err)
			}
			if took < 2*time.Second-50*time.Millisecond || took > 3500*time.Millisecond {
				t.Errorf("ended after %v; want about WithMaxCallDuration (2s), not WithCallTimeout (500ms)", took)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
			defer cancel()
			start = time.Now()
			_, err = rig.CallToolRequest(ctx, r.C, work(1000, 100, -1))
			took = time.Since(start)
			if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) || took > 1800*time.Millisecond {
				t.Errorf("with an 800ms deadline: %v after %v; want the caller's deadline to win", err, took)
			}
			if runs := r.Srv.ToolRuns("work"); runs != 2 {
				t.Errorf("work ran %d times, want 2 (never sent again)", runs)
			}
		})
	}
}

// OnProgress sees every notification of its call, in order, and none of
// another's, through a restart that re-initializes the session: progress
// is routed by token, whatever stream or session brings it. Two calls run
// at once; each is replayed after the restart (SafeToRepeat), and each
// attempt's reports arrive as one increasing run.
func TestOnProgressFollowsItsCallThroughAReinitialization(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false)
			r.Start()
			logs := [2]*progressLog{{}, {}}
			sizes := [2]int{12, 17}
			errs := make(chan error, 2)
			for i := range logs {
				go func() {
					ctx := client.WithCallOptions(r.Ctx(), client.SafeToRepeat(), logs[i].option())
					got, err := rig.CallToolRequest(ctx, r.C, work(sizes[i], 60, -1))
					logs[i].returned()
					if err == nil && got != fmt.Sprint("done ", sizes[i]) {
						err = fmt.Errorf("got %q", got)
					}
					errs <- err
				}()
			}
			rig.Eventually(t, "both calls reporting", func() bool {
				a, _, _ := logs[0].snapshot()
				b, _, _ := logs[1].snapshot()
				return len(a) >= 3 && len(b) >= 3
			})
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			for range logs {
				if err := <-errs; err != nil {
					t.Fatalf("call through the restart: %v", err)
				}
			}
			if r.C.Stats().Reinitializations+r.C.Stats().Redials == 0 && era == testserver.SessionEra {
				t.Errorf("no new session: the restart did not happen under the calls")
			}
			var tokens [2]any
			for i, l := range logs {
				seen, _, after := l.snapshot()
				if after {
					t.Errorf("call %d: OnProgress called after the call returned", i)
				}
				if len(seen) < sizes[i] {
					t.Fatalf("call %d: %d notifications, want at least %d", i, len(seen), sizes[i])
				}
				tokens[i] = seen[0].Params.ProgressToken
				// Runs of 1, 2, ... each: an attempt's reports in order.
				// The last run is the replay's, whole.
				want := 1.0
				for j, n := range seen {
					if n.Params.ProgressToken != tokens[i] {
						t.Fatalf("call %d got notification %d for token %v, not its own %v", i, j, n.Params.ProgressToken, tokens[i])
					}
					if n.Params.Progress == 1 {
						want = 1
					}
					if n.Params.Progress != want {
						t.Fatalf("call %d: notification %d has progress %v, want %v: out of order", i, j, n.Params.Progress, want)
					}
					want++
				}
				if want-1 != float64(sizes[i]) {
					t.Errorf("call %d: the last attempt reported up to %v, want %d", i, want-1, sizes[i])
				}
			}
			if tokens[0] == tokens[1] {
				t.Errorf("both calls carried the token %v", tokens[0])
			}
		})
	}
}

// A caller's own progressToken is kept: the server reports to it, and the
// call is governed by it.
func TestCallersOwnProgressTokenIsKept(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false, client.WithCallTimeout(time.Second))
	r.Start()
	var log progressLog
	req := work(10, 200, -1)
	req.Params.Meta = &mcp.Meta{ProgressToken: "mine-42"}
	ctx := client.WithCallOptions(context.Background(), client.ProgressTimeout(600*time.Millisecond), log.option())
	if got, err := rig.CallToolRequest(ctx, r.C, req); err != nil || got != "done 10" {
		t.Fatalf("work with the caller's token = %q, %v", got, err)
	}
	seen, _, _ := log.snapshot()
	if len(seen) != 10 || seen[0].Params.ProgressToken != "mine-42" {
		t.Errorf("OnProgress saw %d notifications, the first for %v; want 10 for mine-42", len(seen), seen[0].Params.ProgressToken)
	}
}

// SafeToRepeat on a tool without annotations cut after it ran: replayed,
// the tool ran twice, as asked. NeverRepeat on a read-only tool in the same
// fault: ErrOutcomeUnknown, ran once.
func TestSafeToRepeatAndNeverRepeatOverrideTheAnnotations(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false)
			r.Start()
			r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
			ctx := client.WithCallOptions(r.Ctx(), client.SafeToRepeat())
			if _, err := rig.CallTool(ctx, r.C, "increment", nil); err != nil {
				t.Fatalf("increment with SafeToRepeat, cut after it ran: %v", err)
			}
			if runs := r.Srv.ToolRuns("increment"); runs != 2 {
				t.Errorf("increment ran %d times, want 2 (replayed, as asked)", runs)
			}
			r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
			ctx = client.WithCallOptions(r.Ctx(), client.NeverRepeat())
			_, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": "once"})
			if !errors.Is(err, client.ErrOutcomeUnknown) {
				t.Fatalf("echo with NeverRepeat, cut after it ran: %v; want ErrOutcomeUnknown", err)
			}
			if runs := r.Srv.ToolRuns("echo"); runs != 1 {
				t.Errorf("echo ran %d times, want 1", runs)
			}
			// Without options, the annotations decide, as before.
			r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
			if _, err := rig.CallTool(r.Ctx(), r.C, "increment", nil); !errors.Is(err, client.ErrOutcomeUnknown) {
				t.Errorf("increment without options, cut after it ran: %v; want ErrOutcomeUnknown", err)
			}
		})
	}
}

// Options given twice: the last wins; options on a context carry to a
// context derived from it; an invalid option is a clear error, not a call.
func TestCallOptionsCompose(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
	r.Start()
	ctx := client.WithCallOptions(r.Ctx(), client.NeverRepeat())
	type unrelated struct{}
	ctx = client.WithCallOptions(context.WithValue(ctx, unrelated{}, 1), client.SafeToRepeat())
	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	if _, err := rig.CallTool(ctx, r.C, "increment", nil); err != nil {
		t.Fatalf("the last option, SafeToRepeat, should win: %v", err)
	}
	bad := client.WithCallOptions(r.Ctx(), client.ProgressTimeout(0))
	_, err := rig.CallTool(bad, r.C, "increment", nil)
	if err == nil || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("ProgressTimeout(0): %v; want an error naming the option", err)
	}
	if runs := r.Srv.ToolRuns("increment"); runs != 2 {
		t.Errorf("increment ran %d times, want 2 (the invalid call sent nothing)", runs)
	}
}

// events is an observer that keeps the events it is told, with when.
type events struct {
	rig.Recorder
	mu sync.Mutex
	at []timedEvent
}

type timedEvent struct {
	ev observe.Event
	at time.Time
}

func newEvents(t *testing.T) *events { return &events{Recorder: rig.Recorder{T: t, Name: "events"}} }

func (e *events) HandleEvent(_ observe.Server, ev observe.Event) {
	e.mu.Lock()
	e.at = append(e.at, timedEvent{ev, time.Now()})
	e.mu.Unlock()
}

// firstDialFailure is when the first DialFailed was told, zero if none.
func (e *events) firstDialFailure() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, te := range e.at {
		if _, ok := te.ev.(observe.DialFailed); ok {
			return te.at
		}
	}
	return time.Time{}
}

// breaker lists the BreakerState events told so far.
func (e *events) breaker() []observe.BreakerState {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []observe.BreakerState
	for _, te := range e.at {
		if b, ok := te.ev.(observe.BreakerState); ok {
			out = append(out, b)
		}
	}
	return out
}

// F36: with the server down for good, a FailFast call returns ErrUnavailable
// at once after the first reconnect attempt failed (the acceptance's bound:
// 50ms), and later FailFast calls return at once; a call without it waits
// for its deadline, as before.
func TestF36FailFastCallDoesNotWaitForAServerThatIsGone(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			ev := newEvents(t)
			r := rig.New(t, testserver.Config{Era: era}, false, client.WithObserver(ev))
			r.Start()
			r.MustEcho("before")
			r.Srv.Stop()
			ctx := client.WithCallOptions(r.Ctx(), client.FailFast())
			_, err := rig.CallTool(ctx, r.C, "increment", nil)
			returned := time.Now()
			if !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown) {
				t.Fatalf("FailFast call with the server down: %v; want ErrUnavailable", err)
			}
			failed := ev.firstDialFailure()
			if failed.IsZero() {
				t.Fatalf("the call returned (%v) before any reconnect attempt failed", err)
			}
			lag := returned.Sub(failed)
			t.Logf("returned %v after the first failed reconnect attempt: %v", lag, err)
			if lag > 50*time.Millisecond {
				t.Errorf("returned %v after the first failed reconnect attempt; want within 50ms", lag)
			}
			start := time.Now()
			_, err = rig.CallTool(ctx, r.C, "increment", nil)
			if took := time.Since(start); !errors.Is(err, client.ErrUnavailable) || took > 50*time.Millisecond {
				t.Errorf("a second FailFast call: %v after %v; want ErrUnavailable at once", err, took)
			}
			wctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			start = time.Now()
			_, err = rig.CallTool(wctx, r.C, "increment", nil)
			if took := time.Since(start); !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || took < 600*time.Millisecond {
				t.Errorf("a call without FailFast: %v after %v; want it to wait for its deadline", err, took)
			}
			if s := r.C.Stats(); s.FailedFast != 2 {
				t.Errorf("Stats().FailedFast = %d, want 2", s.FailedFast)
			}
			if runs := r.Srv.ToolRuns("increment"); runs != 0 {
				t.Errorf("increment ran %d times", runs)
			}
		})
	}
}

// F36: the circuit breaker. With WithFailFastAfter(2s) and the server down
// for good, calls already waiting end when the outage reaches 2s, and calls
// made after that return at once; Stats and the observer say the breaker is
// open. When the server comes back, the reconnect loop (the half-open probe)
// closes it with no call made, and every call succeeds again.
func TestF36CircuitBreakerOpensAfterAnOutageAndClosesWhenTheServerIsBack(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			ev := newEvents(t)
			r := rig.New(t, testserver.Config{Era: era}, false, client.WithObserver(ev), client.WithFailFastAfter(2*time.Second))
			r.Start()
			r.MustEcho("before")
			r.Srv.Stop()
			waiting := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "waiting"})
				waiting <- err
			}()
			err := <-waiting
			waited := time.Since(start)
			t.Logf("a call waiting in the outage ended after %v: %v", waited.Round(time.Millisecond), err)
			if !errors.Is(err, client.ErrUnavailable) || waited < 1900*time.Millisecond || waited > 4*time.Second {
				t.Fatalf("a call waiting in the outage: %v after %v; want ErrUnavailable when the outage reaches 2s", err, waited)
			}
			s := r.C.Stats()
			if !s.FailingFast || s.OutageSince.IsZero() {
				t.Errorf("Stats: FailingFast %v, OutageSince %v; want the breaker open", s.FailingFast, s.OutageSince)
			}
			for i := range 5 {
				start := time.Now()
				_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": fmt.Sprint("fast ", i)})
				if took := time.Since(start); !errors.Is(err, client.ErrUnavailable) || took > 50*time.Millisecond {
					t.Errorf("call %d with the breaker open: %v after %v; want ErrUnavailable within 50ms", i, err, took)
				}
			}
			rig.Eventually(t, "the observer told the breaker opened", func() bool { return len(ev.breaker()) == 1 })

			// Back: no call is made until the client says it is Ready.
			httpBefore := r.Srv.HTTPRequests("POST")
			if err := r.Srv.Start(); err != nil {
				t.Fatal(err)
			}
			rig.Eventually(t, "the breaker closed", func() bool {
				return r.C.State() == client.Ready && !r.C.Stats().FailingFast
			})
			// Observers are told in order but on the notifier's goroutine,
			// after the state the client reports has changed.
			rig.Eventually(t, "the observer told the breaker closed", func() bool { return len(ev.breaker()) >= 2 })
			b := ev.breaker()
			if len(b) != 2 || !b[0].Open || b[1].Open {
				t.Errorf("observer told %+v; want open, then closed", b)
			}
			if n := r.Srv.RPCs("tools/call"); n != 1 {
				t.Errorf("%d tools/call reached the server; only the one before the outage should have", n)
			}
			t.Logf("%d POSTs from the reconnect loop while the server came back", r.Srv.HTTPRequests("POST")-httpBefore)
			for i := range 5 {
				r.MustEcho(fmt.Sprint("after ", i))
			}
		})
	}
}

// A restart shorter than WithFailFastAfter fails no call: the breaker is
// for outages, not restarts.
func TestF36RestartShorterThanTheBreakerFailsNoCall(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false, client.WithFailFastAfter(2*time.Second))
			r.Start()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			var calls int
			var failures []error
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 1000; i++ {
						select {
						case <-stop:
							return
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						want := fmt.Sprint(g, "-", i)
						got, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": want})
						cancel()
						mu.Lock()
						calls++
						if err != nil || got != want {
							failures = append(failures, fmt.Errorf("%q, %v", got, err))
						}
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
					}
				}()
			}
			time.Sleep(200 * time.Millisecond)
			r.Srv.Stop()
			time.Sleep(time.Second)
			if err := r.Srv.Start(); err != nil {
				t.Fatal(err)
			}
			rig.Eventually(t, "Ready", func() bool { return r.C.State() == client.Ready })
			time.Sleep(200 * time.Millisecond)
			close(stop)
			wg.Wait()
			t.Logf("%d calls through a 1s restart, %d failed; stats %+v", calls, len(failures), r.C.Stats())
			if len(failures) > 0 {
				t.Errorf("%d calls failed through a restart shorter than the breaker, the first: %v", len(failures), failures[0])
			}
			if r.C.Stats().FailedFast != 0 {
				t.Errorf("%d calls failed fast", r.C.Stats().FailedFast)
			}
		})
	}
}

// F34 against servers nobody here wrote: go-sdk's (stateful and stateless)
// and server-everything's long-running tool, which report progress, run
// longer than WithCallTimeout and succeed under ProgressTimeout, both with
// the caller's own progressToken and with the client's.
func TestF34ProgressAgainstRealServers(t *testing.T) {
	for _, tg := range []rig.Target{rig.GoSDKTarget, rig.GoSDKStatelessTarget, rig.EverythingTarget} {
		t.Run(tg.Name, func(t *testing.T) {
			srv := tg.Start(t)
			c := rig.RealClient(t, srv, client.WithCallTimeout(time.Second))
			for _, own := range []bool{true, false} {
				req := srv.Long("callers-own")
				if !own {
					req.Params.Meta = nil
				}
				var log progressLog
				ctx := client.WithCallOptions(context.Background(), client.ProgressTimeout(900*time.Millisecond), log.option())
				start := time.Now()
				res, err := c.CallTool(ctx, req)
				log.returned()
				if err != nil || res.IsError {
					t.Fatalf("long call (caller's token: %v) under ProgressTimeout: %v, %+v", own, err, res)
				}
				seen, _, after := log.snapshot()
				t.Logf("caller's token %v: %d progress notifications over %v", own, len(seen), time.Since(start).Round(time.Millisecond))
				if len(seen) < 3 || after {
					t.Errorf("OnProgress saw %d notifications (after return: %v); want the tool's reports", len(seen), after)
				}
				for i := 1; i < len(seen); i++ {
					if seen[i].Params.Progress <= seen[i-1].Params.Progress {
						t.Errorf("progress out of order: %v then %v", seen[i-1].Params.Progress, seen[i].Params.Progress)
					}
				}
				if own && len(seen) > 0 && seen[0].Params.ProgressToken != "callers-own" {
					t.Errorf("progress for %v; want the caller's token", seen[0].Params.ProgressToken)
				}
			}
			// Without ProgressTimeout, WithCallTimeout still cuts it.
			if _, err := c.CallTool(context.Background(), srv.Long("x")); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("long call without ProgressTimeout: %v; want WithCallTimeout's deadline", err)
			}
		})
	}
}

// Progress is not only for tools/call: WithProgressTimeout governs every
// request the caller makes, so each carries a progressToken of its own
// call (the caller's kept where it set one), whatever the method.
func TestProgressTokenOnEveryMethod(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era, RecordMeta: true}, false, client.WithProgressTimeout(5*time.Second))
			r.Start()
			read := mcp.ReadResourceRequest{}
			read.Params.URI = testserver.CounterURI
			if _, err := r.C.ReadResource(r.Ctx(), read); err != nil {
				t.Fatal(err)
			}
			if _, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
				t.Fatal(err)
			}
			prompt := mcp.GetPromptRequest{}
			list, err := r.C.ListPrompts(r.Ctx(), mcp.ListPromptsRequest{})
			if err != nil || len(list.Prompts) == 0 {
				t.Fatalf("ListPrompts: %v", err)
			}
			prompt.Params.Name = list.Prompts[0].Name
			prompt.Params.Arguments = map[string]string{}
			for _, a := range list.Prompts[0].Arguments {
				prompt.Params.Arguments[a.Name] = "x"
			}
			if _, err := r.C.GetPrompt(r.Ctx(), prompt); err != nil {
				t.Fatal(err)
			}
			r.MustEcho("x")
			tokens := map[any]string{}
			for _, method := range []string{"resources/read", "tools/list", "prompts/list", "prompts/get", "tools/call"} {
				metas := r.Srv.ReceivedMeta(method)
				if len(metas) == 0 {
					t.Fatalf("no %s received", method)
				}
				token := metas[len(metas)-1]["progressToken"]
				if token == nil {
					t.Errorf("%s carried no progressToken: _meta %v", method, metas[len(metas)-1])
					continue
				}
				if other, dup := tokens[token]; dup {
					t.Errorf("%s and %s carried the same token %v", method, other, token)
				}
				tokens[token] = method
			}
		})
	}
}

// F35 against servers nobody here wrote: the server process freezes
// (SIGSTOP) in the middle of a long call that reports progress. The call
// ends one idle period after its last progress with ErrOutcomeUnknown and
// *ProgressTimeoutError, rather than at its deadline; once the server
// thaws, the client serves calls again.
func TestF35FrozenRealServerEndsTheCallByProgress(t *testing.T) {
	for _, tg := range []rig.Target{rig.GoSDKTarget, rig.GoSDKStatelessTarget, rig.EverythingTarget} {
		t.Run(tg.Name, func(t *testing.T) {
			srv := tg.Start(t)
			c := rig.RealClient(t, srv)
			var log progressLog
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ctx = client.WithCallOptions(ctx, client.ProgressTimeout(time.Second), log.option())
			req := srv.Long("")
			req.Params.Meta = nil
			done := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, req)
				log.returned()
				done <- err
			}()
			rig.Eventually(t, "the first progress", func() bool { seen, _, _ := log.snapshot(); return len(seen) > 0 })
			srv.Freeze(t)
			err := <-done
			ended := time.Now()
			srv.Thaw(t)
			_, at, _ := log.snapshot()
			idle := ended.Sub(at[len(at)-1])
			t.Logf("frozen after %d progress notifications; the call ended %v after the last: %v", len(at), idle.Round(time.Millisecond), err)
			if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.As(err, new(*client.ProgressTimeoutError)) {
				t.Fatalf("call to a frozen server: %v; want ErrOutcomeUnknown for want of progress", err)
			}
			if idle < 950*time.Millisecond || idle > 2500*time.Millisecond {
				t.Errorf("ended %v after the last progress; want about the idle timeout (1s)", idle)
			}
			echo, want := srv.Echo("thawed")
			res, err := c.CallTool(ctx, echo)
			if err != nil || len(res.Content) == 0 || res.Content[0].(mcp.TextContent).Text != want {
				t.Errorf("a call after the thaw: %+v, %v", res, err)
			}
		})
	}
}
