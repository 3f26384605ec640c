// Package health decides whether a connection (or anything that can be
// probed) is alive: it records signs of life, probes a member that has been
// idle for an interval, and reports it unhealthy after a number of failed
// probes in a row. Traffic is proof of life, so a busy member is never
// probed.
//
// The package knows nothing of MCP, HTTP or pools.
package health

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// Config is the behaviour of a Monitor. Probe is required.
type Config struct {
	// Interval: a member not heard from for this long is probed in the
	// background. 0 turns the background prober off; Check still works.
	Interval time.Duration
	// Jitter spreads the waits to Interval ± Jitter·Interval, so that the
	// probes of many members started together do not align. Default 0.1.
	Jitter float64
	// Timeout bounds one probe. Default: Interval/2, or 10s without one.
	Timeout time.Duration
	// Threshold is the number of failed probes in a row after which the
	// member is unhealthy. Default 1.
	Threshold int
	// Probe asks the member whether it is alive.
	Probe func(ctx context.Context) error
	// OnProbe is told of every probe's result and the failures in a row
	// after it.
	OnProbe func(err error, failures int)
	// OnUnhealthy is called once, with the last probe's error, when
	// Threshold is reached. The background prober stops then: replacing the
	// member is the caller's business.
	OnUnhealthy func(err error)
}

// Monitor watches one member. It is safe for concurrent use.
type Monitor struct {
	cfg      Config
	ctx      context.Context // ends at Stop; probes run under it
	cancel   context.CancelFunc
	done     chan struct{} // closed when the background prober exits
	last     atomic.Int64  // unix nanoseconds of the last sign of life
	failures atomic.Int32
	gaveUp   atomic.Bool
	probes   singleflight.Group
	stopOnce sync.Once
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
		cfg.Timeout = 10 * time.Second
		if cfg.Interval > 0 {
			cfg.Timeout = min(cfg.Interval/2, cfg.Timeout)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Monitor{cfg: cfg, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	m.Touch()
	if cfg.Interval > 0 {
		go m.run()
	} else {
		close(m.done)
	}
	return m
}

// Touch records a sign of life: a successful call.
func (m *Monitor) Touch() { m.last.Store(time.Now().UnixNano()) }

// IdleFor is how long the member has not been heard from.
func (m *Monitor) IdleFor() time.Duration {
	return time.Duration(time.Now().UnixNano() - m.last.Load())
}

// Failures is the number of failed probes in a row.
func (m *Monitor) Failures() int { return int(m.failures.Load()) }

// Unhealthy reports whether the threshold was reached.
func (m *Monitor) Unhealthy() bool { return m.gaveUp.Load() }

// Check probes the member now, once for every caller that asks while a probe
// is under way, and returns its result. A caller whose ctx ends first still
// waits for the probe, which Timeout bounds.
func (m *Monitor) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err, _ := m.probes.Do("", func() (any, error) { return nil, m.probe() })
	return err
}

// Stop ends the background prober and any probe under way, and returns once
// the prober has exited. It is idempotent.
func (m *Monitor) Stop() {
	m.stopOnce.Do(m.cancel)
	<-m.done
}

func (m *Monitor) probe() error {
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.Timeout)
	defer cancel()
	err := m.cfg.Probe(ctx)
	failures := 0
	if err == nil {
		m.Touch()
		m.failures.Store(0)
	} else {
		failures = int(m.failures.Add(1))
	}
	if m.cfg.OnProbe != nil {
		m.cfg.OnProbe(err, failures)
	}
	if err != nil && failures >= m.cfg.Threshold && m.ctx.Err() == nil && m.gaveUp.CompareAndSwap(false, true) {
		if m.cfg.OnUnhealthy != nil {
			m.cfg.OnUnhealthy(err)
		}
	}
	return err
}

// run probes whenever the member has been idle for a jittered interval
// since the later of its last sign of life and the last probe.
func (m *Monitor) run() {
	defer close(m.done)
	lastProbe := time.Now()
	wait := m.jittered()
	for !m.gaveUp.Load() {
		since := max(m.last.Load(), lastProbe.UnixNano())
		due := time.Unix(0, since).Add(wait)
		if d := time.Until(due); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-m.ctx.Done():
				t.Stop()
				return
			}
			continue // activity may have pushed the due time on
		}
		_ = m.Check(m.ctx)
		if m.ctx.Err() != nil {
			return
		}
		lastProbe = time.Now()
		wait = m.jittered()
	}
}

func (m *Monitor) jittered() time.Duration {
	spread := (rand.Float64()*2 - 1) * m.cfg.Jitter
	return time.Duration(float64(m.cfg.Interval) * (1 + spread))
}
