// Package health decides whether a connection (or anything that can be
// probed) is alive: it records signs of life, probes a member that has been
// idle for an interval, and reports it unhealthy after a number of failed
// probes in a row. Traffic is proof of life, so a member in steady use
// (touched more often than every (1−Jitter)·Interval) is probed at most
// once, early in its first interval, and never again while the traffic
// goes on.
//
// An idle member costs a timer, not a goroutine: a process may watch
// thousands.
//
// The package knows nothing of MCP, HTTP or pools.
package health

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// DefaultTimeout is the Timeout of a probe when none is set: half the
// interval, at most 10s (10s with no interval), so that a probe ends well
// before the next is due.
func DefaultTimeout(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 10 * time.Second
	}
	return min(interval/2, 10*time.Second)
}

// Config is the behaviour of a Monitor. Probe is required. Start copies it:
// changing it afterwards changes nothing.
type Config struct {
	// Interval: a member not heard from for this long is probed in the
	// background. 0 turns the background prober off; Check still works.
	//
	// The first background probe comes at a uniformly random point of the
	// first interval after Start (after the last sign of life, if later),
	// so that members started together probe at different times from the
	// outset instead of all at once every interval.
	Interval time.Duration
	// Jitter spreads the later waits to Interval ± Jitter·Interval, so that
	// probes do not fall back into step. Default 0.1.
	Jitter float64
	// Timeout bounds one probe. Default: DefaultTimeout(Interval), Interval/2
	// and at most 10s, or 10s without an Interval.
	Timeout time.Duration
	// Threshold is the number of failed probes in a row after which the
	// member is unhealthy. Default 1.
	Threshold int
	// Probe asks the member whether it is alive. An error that wraps a
	// *BusyError means the member answered but asked to be left alone for a
	// while: not a failure, and the next background probe waits for it.
	Probe func(ctx context.Context) error
	// OnProbe is told of every probe's result and the failures in a row
	// after it.
	OnProbe func(err error, failures int)
	// OnUnhealthy is called once, with the last probe's error, when
	// Threshold is reached. The background prober stops then: replacing the
	// member is the caller's business.
	OnUnhealthy func(err error)
}

// BusyError is a probe's answer from a member that is alive but asks not to
// be probed again before After (an HTTP 503 or 429; After is its
// Retry-After, 0 without one): it is neither a failure nor a sign of life.
// The background prober waits at least After before the next probe; Check
// returns it to the caller, who decides what a busy member means for its own
// work.
type BusyError struct {
	After time.Duration
	Err   error
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("busy, asked to wait %v: %v", e.After, e.Err)
}

func (e *BusyError) Unwrap() error { return e.Err }

// Monitor watches one member. It is safe for concurrent use.
//
// The background prober is a timer, not a goroutine: it fires when the
// member may next be due, looks at the time of its last sign of life (which
// Touch records with one atomic store), and either probes or sets itself for
// the new due time.
type Monitor struct {
	cfg       Config
	last      atomic.Int64 // unix nanoseconds of the last sign of life
	busyUntil atomic.Int64 // unix nanoseconds before which the member asked not to be probed
	failures  atomic.Int32
	gaveUp    atomic.Bool

	// mu guards the fields below. It is the only lock of a Monitor (Check
	// takes its probe group's own under it, to start or join a probe); no
	// Config callback runs under it.
	mu      sync.Mutex
	stopped bool
	// probes shares the probe under way with every Check that asks
	// meanwhile; each waits for it within its own context. A group of its
	// own per probe, dropped when the probe ends: a Group's map keeps its
	// storage once used (256 B), which every idle member would hold for
	// good (BenchmarkIdleClients).
	probes  *singleflight.Group
	cancel  context.CancelFunc // ends the probe under way
	probing sync.WaitGroup     // the probe under way; Add only while !stopped
	timer   *time.Timer        // the background prober; nil without Interval
	ticking sync.WaitGroup     // a timer callback under way; Add only while !stopped

	// Only the timer callback touches these, and one runs at a time: the
	// timer is set again only at the end of a callback.
	lastProbe int64         // unix nanoseconds of the end of the last background probe, or Start
	wait      time.Duration // from the later of lastProbe and last to the next probe
}

// Start returns a Monitor that counts the member alive as of now, and starts
// the background prober if cfg.Interval > 0.
func Start(cfg Config) *Monitor {
	if cfg.Jitter == 0 {
		cfg.Jitter = 0.1
	}
	if cfg.Threshold < 1 {
		cfg.Threshold = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout(cfg.Interval)
	}
	m := &Monitor{cfg: cfg}
	m.Touch()
	if cfg.Interval > 0 {
		m.lastProbe = m.last.Load()
		// A random phase within one whole interval: members started
		// together (a fleet of clients, a pool reconnecting after an
		// outage) then probe evenly spread, where jitter alone would take
		// dozens of intervals to spread them.
		m.wait = time.Duration(rand.Int64N(int64(cfg.Interval)) + 1)
		m.mu.Lock()
		m.timer = time.AfterFunc(m.wait, m.tick)
		m.mu.Unlock()
	}
	return m
}

// Touch records a sign of life: a successful call. It is cheap enough for
// every call: it neither locks nor resets the timer, and writes only when
// the last sign is touchGrain old, so that calls on many cores at once do
// not take turns writing one cache line.
func (m *Monitor) Touch() {
	if now := time.Now().UnixNano(); now-m.last.Load() >= int64(touchGrain) {
		m.last.Store(now)
	}
}

// touchGrain is how stale Touch may leave the last sign of life: nothing
// decided on it (probes, validation) is finer than a millisecond.
const touchGrain = time.Millisecond

// IdleFor is how long the member has not been heard from.
func (m *Monitor) IdleFor() time.Duration {
	return time.Duration(time.Now().UnixNano() - m.last.Load())
}

// Failures is the number of failed probes in a row.
func (m *Monitor) Failures() int { return int(m.failures.Load()) }

// Unhealthy reports whether the threshold was reached.
func (m *Monitor) Unhealthy() bool { return m.gaveUp.Load() }

// Check probes the member now, once for every caller that asks while a probe
// is under way, and returns its result. Each caller waits within its own
// ctx: one whose ctx ends first returns ctx's error at once, and the probe,
// which Timeout bounds, goes on for the others. After Stop it returns
// context.Canceled without probing.
func (m *Monitor) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// DoChan under mu, where runProbe drops the group: a Check that finds
	// the group finds its probe under way, not ended.
	m.mu.Lock()
	g := m.probes
	if g == nil {
		g = new(singleflight.Group)
		m.probes = g
	}
	done := g.DoChan("", func() (any, error) { return m.runProbe(g) })
	m.mu.Unlock()
	select {
	case r := <-done:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runProbe is the shared probe of Check, in group g: detached from any
// caller's context, bounded by Timeout, ended by Stop. It drops g when it
// ends, so that the next Check starts a new probe in a new group.
func (m *Monitor) runProbe(g *singleflight.Group) (any, error) {
	m.mu.Lock()
	if m.stopped {
		m.dropGroupLocked(g)
		m.mu.Unlock()
		return nil, context.Canceled
	}
	pctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
	m.cancel = cancel
	m.probing.Add(1)
	m.mu.Unlock()
	defer m.probing.Done()

	err := m.probe(pctx)
	cancel()
	m.mu.Lock()
	m.cancel = nil
	m.dropGroupLocked(g)
	m.mu.Unlock()
	return nil, err
}

func (m *Monitor) dropGroupLocked(g *singleflight.Group) {
	if m.probes == g {
		m.probes = nil
	}
}

// Stop ends the background prober and any probe under way, and returns once
// no probe and no callback of the Monitor's is running: nothing of it runs
// after Stop returns. It is idempotent. It must not be called from the
// Config's callbacks, which Stop would wait for.
func (m *Monitor) Stop() {
	m.mu.Lock()
	m.stopped = true
	if m.timer != nil {
		m.timer.Stop()
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.mu.Unlock()
	m.ticking.Wait()
	m.probing.Wait()
}

func (m *Monitor) probe(ctx context.Context) error {
	err := m.cfg.Probe(ctx)
	var busy *BusyError
	failures := 0
	switch {
	case err == nil:
		m.Touch()
		m.failures.Store(0)
	case errors.As(err, &busy):
		// Alive, and asking for a pause: the failures in a row stand.
		m.busyUntil.Store(time.Now().Add(busy.After).UnixNano())
		failures = int(m.failures.Load())
		if m.cfg.OnProbe != nil {
			m.cfg.OnProbe(err, failures)
		}
		return err
	default:
		failures = int(m.failures.Add(1))
	}
	if m.cfg.OnProbe != nil {
		m.cfg.OnProbe(err, failures)
	}
	if err != nil && failures >= m.cfg.Threshold {
		m.mu.Lock()
		stopped := m.stopped
		m.mu.Unlock()
		if !stopped && m.gaveUp.CompareAndSwap(false, true) && m.cfg.OnUnhealthy != nil {
			m.cfg.OnUnhealthy(err)
		}
	}
	return err
}

// tick is the background prober: it probes if the member has been idle for
// the current wait since the later of its last sign of life and the last
// background probe, and sets the timer for the next due time.
func (m *Monitor) tick() {
	m.mu.Lock()
	if m.stopped || m.gaveUp.Load() {
		m.mu.Unlock()
		return
	}
	m.ticking.Add(1)
	m.mu.Unlock()
	defer m.ticking.Done()

	due := max(max(m.last.Load(), m.lastProbe)+int64(m.wait), m.busyUntil.Load())
	if d := time.Duration(due - time.Now().UnixNano()); d > 0 {
		m.after(d) // activity pushed the due time on
		return
	}
	_ = m.Check(context.Background())
	if m.gaveUp.Load() {
		return
	}
	m.lastProbe = time.Now().UnixNano()
	m.wait = m.jittered()
	m.after(m.wait)
}

// after sets the timer to fire in d, unless the Monitor was stopped.
func (m *Monitor) after(d time.Duration) {
	m.mu.Lock()
	if !m.stopped {
		m.timer.Reset(d)
	}
	m.mu.Unlock()
}

func (m *Monitor) jittered() time.Duration {
	spread := (rand.Float64()*2 - 1) * m.cfg.Jitter
	return time.Duration(float64(m.cfg.Interval) * (1 + spread))
}
