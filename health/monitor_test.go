package health

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// prober records when it was called and fails while failing is set, or as
// script says, one result per probe, while the script lasts.
type prober struct {
	mu      sync.Mutex
	at      []time.Time
	script  []bool // true: fail
	failing atomic.Bool
	block   bool
}

func (p *prober) probe(ctx context.Context) error {
	p.mu.Lock()
	p.at = append(p.at, time.Now())
	block := p.block
	fail := p.failing.Load()
	if len(p.script) > 0 {
		fail, p.script = p.script[0], p.script[1:]
	}
	p.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail {
		return errors.New("no answer")
	}
	return nil
}

func (p *prober) times() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.at...)
}

func TestIdleMemberIsProbedEveryJitteredInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{}
		start := time.Now()
		m := Start(Config{Interval: time.Second, Probe: p.probe})
		time.Sleep(20*time.Second + time.Millisecond)
		m.Stop()
		at := p.times()
		if len(at) < 18 || len(at) > 23 {
			t.Fatalf("%d probes in 20s at a 1s ±10%% interval", len(at))
		}
		if first := at[0].Sub(start); first <= 0 || first > time.Second {
			t.Errorf("first probe %v after Start, want within the first interval", first)
		}
		distinct := map[time.Duration]bool{}
		for i := 1; i < len(at); i++ {
			gap := at[i].Sub(at[i-1])
			if gap < 900*time.Millisecond || gap > 1100*time.Millisecond {
				t.Errorf("probe %d came %v after the previous one, want 1s ±10%%", i, gap)
			}
			distinct[gap] = true
		}
		if len(distinct) < 2 {
			t.Error("every gap was the same: no jitter")
		}
	})
}

// Members started at the same instant, as a fleet of clients opened
// together, must not probe as a herd: the first probes spread over a whole
// interval, and later ones stay spread.
func TestProbesOfMembersStartedTogetherAreSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const members, interval, window = 1000, time.Second, 100 * time.Millisecond
		var mu sync.Mutex
		perWindow := map[time.Duration]int{}
		firsts := make([]time.Duration, members)
		start := time.Now()
		monitors := make([]*Monitor, members)
		for i := range monitors {
			monitors[i] = Start(Config{Interval: interval, Probe: func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				since := time.Since(start)
				perWindow[since/window]++
				if firsts[i] == 0 {
					firsts[i] = since
				}
				return nil
			}})
		}
		time.Sleep(5 * interval)
		for _, m := range monitors {
			m.Stop()
		}
		mu.Lock()
		defer mu.Unlock()
		total, peak := 0, 0
		for w := range 5 * interval / window {
			total += perWindow[w]
			peak = max(peak, perWindow[w])
		}
		mean := float64(total) / float64(5*interval/window)
		if float64(peak) > 2*mean {
			t.Errorf("%d probes in the busiest 100ms window, mean %.0f: a herd", peak, mean)
		}
		for i, first := range firsts {
			if first <= 0 || first > interval {
				t.Fatalf("member %d first probed %v after Start, want within the first interval", i, first)
			}
		}
	})
}

func TestAnIdleMemberCostsNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		monitors := make([]*Monitor, 100)
		for i := range monitors {
			monitors[i] = Start(Config{Interval: time.Second, Probe: func(context.Context) error { return nil }})
		}
		time.Sleep(10 * time.Second) // probing all along
		synctest.Wait()
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if n := strings.Count(stacks, "health.(*Monitor)"); n > 0 {
			t.Errorf("%d goroutines of 100 idle monitors:\n%s", n, stacks)
		}
		for _, m := range monitors {
			m.Stop()
		}
	})
}

func TestTrafficIsProofOfLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{}
		m := Start(Config{Interval: time.Second, Probe: p.probe})
		defer m.Stop()
		// The first interval's probe comes at a random point of it; a
		// member still idle then is probed once.
		time.Sleep(time.Second)
		first := len(p.times())
		for range 20 {
			m.Touch()
			time.Sleep(500 * time.Millisecond)
		}
		if n := len(p.times()) - first; n != 0 {
			t.Fatalf("%d probes of a member with traffic every 500ms", n)
		}
		time.Sleep(700 * time.Millisecond)
		if n := len(p.times()) - first; n != 1 {
			t.Fatalf("%d probes 1.2s after the traffic stopped, want 1", n)
		}
	})
}

// A member busy from the start may be probed once, at the random point of
// its first interval that spreads members started together, and never
// again while the traffic goes on.
func TestBusyMemberIsProbedAtMostOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{}
		start := time.Now()
		m := Start(Config{Interval: time.Second, Probe: p.probe})
		defer m.Stop()
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			m.Touch()
		}
		at := p.times()
		if len(at) > 1 || len(at) == 1 && at[0].Sub(start) >= 100*time.Millisecond {
			t.Fatalf("probes at %v after Start; want at most one, before the first traffic", at)
		}
	})
}

func TestUnhealthyAfterThresholdFailuresInARow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{}
		p.failing.Store(true)
		var unhealthy atomic.Int32
		var results []int
		m := Start(Config{
			Interval: time.Second, Threshold: 3, Probe: p.probe,
			OnProbe: func(_ error, failures int) {
				results = append(results, failures)
				if unhealthy.Load() != 0 {
					t.Errorf("unhealthy before the probe that made %d failures", failures)
				}
			},
			OnUnhealthy: func(error) {
				if len(results) != 3 {
					t.Errorf("unhealthy after %d probes, want 3", len(results))
				}
				unhealthy.Add(1)
			},
		})
		defer m.Stop()
		time.Sleep(20 * time.Second)
		m.Stop() // so that results may be read
		if unhealthy.Load() != 1 || !m.Unhealthy() {
			t.Fatalf("OnUnhealthy called %d times, want 1", unhealthy.Load())
		}
		if n := len(p.times()); n != 3 {
			t.Errorf("%d probes; the prober must stop once the member is unhealthy", n)
		}
		if len(results) != 3 || results[2] != 3 {
			t.Errorf("OnProbe saw failures %v, want [1 2 3]", results)
		}
	})
}

func TestSuccessResetsTheFailureCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{script: []bool{true, false, true, false, true}}
		var unhealthy atomic.Int32
		var results []int
		m := Start(Config{
			Interval: time.Second, Threshold: 2, Probe: p.probe,
			OnProbe:     func(_ error, failures int) { results = append(results, failures) },
			OnUnhealthy: func(error) { unhealthy.Add(1) },
		})
		defer m.Stop()
		for len(p.times()) < 5 {
			time.Sleep(100 * time.Millisecond)
		}
		m.Stop() // so that results may be read
		if unhealthy.Load() != 0 || m.Failures() != 1 {
			t.Fatalf("fail, succeed, fail, succeed, fail: unhealthy=%d failures=%d; want 0 and 1", unhealthy.Load(), m.Failures())
		}
		if want := []int{1, 0, 1, 0, 1}; !slices.Equal(results, want) {
			t.Errorf("OnProbe saw failures %v, want %v", results, want)
		}
	})
}

func TestProbeTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{block: true}
		m := Start(Config{Interval: time.Second, Timeout: 300 * time.Millisecond, Probe: p.probe})
		defer m.Stop()
		start := time.Now()
		err := m.Check(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("Check = %v after %v; want the probe's deadline after 300ms", err, time.Since(start))
		}
	})
}

func TestConcurrentChecksShareOneProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var probes atomic.Int32
		m := Start(Config{Probe: func(context.Context) error {
			probes.Add(1)
			<-release
			return nil
		}})
		defer m.Stop()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if err := m.Check(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if n := probes.Load(); n != 1 {
			t.Errorf("%d probes for 50 concurrent checks, want 1", n)
		}
		// The next check is a probe of its own.
		if err := m.Check(context.Background()); err != nil || probes.Load() != 2 {
			t.Errorf("check after the shared one: %v, %d probes; want a second probe", err, probes.Load())
		}
	})
}

func TestStopEndsAProbeUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{block: true}
		m := Start(Config{Interval: time.Second, Timeout: time.Hour, Probe: p.probe})
		time.Sleep(1500 * time.Millisecond)
		m.Stop()
		m.Stop()
		if n := len(p.times()); n != 1 {
			t.Fatalf("%d probes, want the one Stop interrupted", n)
		}
	})
}

// Nothing of the Monitor runs after Stop returns: not the background
// probe's callbacks, not a probe a caller's Check started.
func TestStopWaitsForTheProbeAndItsCallbacks(t *testing.T) {
	for _, background := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			var stopped, late atomic.Bool
			m := Start(Config{
				Interval: time.Second, Timeout: time.Hour,
				Probe: func(ctx context.Context) error {
					<-ctx.Done()
					time.Sleep(50 * time.Millisecond) // slow to wind down
					return ctx.Err()
				},
				OnProbe:     func(error, int) { late.Store(stopped.Load()) },
				OnUnhealthy: func(error) { t.Error("OnUnhealthy for a probe Stop ended") },
			})
			if background {
				time.Sleep(1500 * time.Millisecond)
			} else {
				go m.Check(context.Background())
				synctest.Wait()
			}
			m.Stop()
			stopped.Store(true)
			time.Sleep(time.Second) // for whatever Stop did not wait for
			if late.Load() {
				t.Errorf("background=%v: OnProbe ran after Stop returned", background)
			}
			if err := m.Check(context.Background()); !errors.Is(err, context.Canceled) {
				t.Errorf("Check after Stop = %v, want context.Canceled", err)
			}
		})
	}
}

func TestNoBackgroundProbesWithoutInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{}
		m := Start(Config{Probe: p.probe})
		defer m.Stop()
		time.Sleep(time.Hour)
		if n := len(p.times()); n != 0 {
			t.Fatalf("%d background probes with the prober off", n)
		}
		if m.IdleFor() != time.Hour {
			t.Errorf("IdleFor = %v, want 1h", m.IdleFor())
		}
		if err := m.Check(context.Background()); err != nil || m.IdleFor() != 0 {
			t.Errorf("Check = %v, IdleFor after = %v", err, m.IdleFor())
		}
	})
}

// F31: a caller waiting for a probe that stalls returns by its own
// deadline; the probe goes on, bounded by Timeout, for whoever else waits.
func TestCheckReturnsByTheCallersDeadlineWhileTheProbeStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &prober{block: true}
		m := Start(Config{Timeout: 6 * time.Second, Probe: p.probe})
		defer m.Stop()
		patient := make(chan error, 1)
		go func() { patient <- m.Check(context.Background()) }()
		synctest.Wait()

		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		err := m.Check(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 500*time.Millisecond {
			t.Fatalf("Check = %v after %v; want the caller's deadline after 500ms", err, time.Since(start))
		}
		// The shared probe ran on to its own Timeout for the patient caller.
		if err := <-patient; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the patient caller got %v; want the probe's timeout", err)
		}
		if n := len(p.times()); n != 1 {
			t.Errorf("%d probes, want the one shared", n)
		}
	})
}

// F30: a member that answers busy is not failing: no failures are counted,
// OnUnhealthy is not called, and the next background probe waits as long
// as it asked.
func TestBusyIsNotAFailureAndDelaysTheNextProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Time
		busy := true
		unhealthy := false
		m := Start(Config{
			Interval: time.Second, Jitter: 0.0001,
			Probe: func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				at = append(at, time.Now())
				if busy {
					busy = false
					return &BusyError{After: 10 * time.Second, Err: errors.New("503")}
				}
				return nil
			},
			OnUnhealthy: func(error) { unhealthy = true },
		})
		time.Sleep(15 * time.Second)
		m.Stop()
		mu.Lock()
		defer mu.Unlock()
		if unhealthy || m.Failures() != 0 {
			t.Fatalf("busy counted as failing: unhealthy %v, failures %d", unhealthy, m.Failures())
		}
		if len(at) < 2 {
			t.Fatalf("%d probes in 15s; want the busy one and one after the pause", len(at))
		}
		if gap := at[1].Sub(at[0]); gap < 10*time.Second {
			t.Errorf("next probe %v after the busy answer; want at least the 10s asked for", gap)
		}
	})
}
