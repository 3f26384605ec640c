// Package breaker is the client's circuit breaker (WithFailFastAfter): it
// follows how long the server has been unreachable with no session in
// service, and once that is longer than after, calls fail at once with
// ErrUnavailable until the reconnect loop has a session again. The
// reconnect loop is its half-open probe: no call is spent finding out that
// the server is back.
//
// It knows nothing of MCP or of the client: the client tells it of
// failures and of the server's answers (Failed, Reached), asks it whether
// calls fail fast (Open, Why), and is told of its openings and closings
// through the funcs it gave New.
package breaker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// Breaker is a circuit breaker that opens once an outage has lasted
// longer than its after.
//
// The outage is counted from the first failure that left the client with
// no session in service (a call's, a probe's or a dial's) and that says
// the server could not be reached or failed as a whole (policy's
// Verdict.Outage); an answer that proves the server is there, or a
// session in service, ends it.
//
// A Breaker is safe for concurrent use, and its methods are safe on a nil
// Breaker, which never opens: a client has none until its first outage,
// so an idle client that never lost its server pays a pointer for it.
type Breaker struct {
	after time.Duration // WithFailFastAfter
	// since is when the outage began, in UnixNano; 0: none.
	since atomic.Int64
	open  atomic.Bool

	// changed is told that the breaker opened or closed, and since when
	// the outage lasted; called under mu, so that openings and closings
	// are told in order (the client's state notifier's lock is taken
	// under mu).
	changed func(open bool, since time.Time)
	// opened is called once the breaker opened, after mu is released: it
	// wakes the calls waiting for a session (the client's pool).
	opened func()

	// mu orders outage starts, ends and trips. Reached is called under
	// the caller's locks (the client's pool's, from its onMemberState),
	// so nothing that takes those is called under mu: opened runs after
	// it is released. changed takes its own lock under it.
	mu      sync.Mutex
	timer   *time.Timer // trips the breaker at since+after
	stopped bool        // Stop was called (at Close): Failed arms nothing after it
}

// New returns a closed Breaker that opens once an outage has lasted
// after, telling changed of its openings and closings (under its lock)
// and calling opened after each opening (outside it).
func New(after time.Duration, changed func(open bool, since time.Time), opened func()) *Breaker {
	return &Breaker{after: after, changed: changed, opened: opened}
}

// Failed is told of a failure that counts as an outage, at a moment when
// no session is in service.
func (b *Breaker) Failed(at time.Time) {
	if b == nil || b.since.Load() != 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.since.Load() != 0 {
		return
	}
	b.since.Store(at.UnixNano())
	wait := b.after - time.Since(at)
	if b.timer == nil {
		b.timer = time.AfterFunc(wait, b.trip)
	} else {
		b.timer.Reset(wait)
	}
}

// trip opens the breaker if the outage it was set for still lasts.
func (b *Breaker) trip() {
	b.mu.Lock()
	since := b.since.Load()
	if b.stopped || since == 0 || b.open.Load() || !policy.BreakerOpen(time.Unix(0, since), b.after, time.Now()) {
		b.mu.Unlock()
		return
	}
	b.open.Store(true)
	b.changed(true, time.Unix(0, since))
	b.mu.Unlock()
	b.opened()
}

// Reached is told that the server is there: a session went into service,
// or the server answered as only a live server does.
func (b *Breaker) Reached() {
	if b == nil || b.since.Load() == 0 {
		return
	}
	b.mu.Lock()
	since := b.since.Swap(0)
	wasOpen := b.open.Swap(false)
	if b.timer != nil {
		b.timer.Stop()
	}
	if wasOpen {
		b.changed(false, time.Unix(0, since))
	}
	b.mu.Unlock()
}

// Open reports whether calls fail fast now.
func (b *Breaker) Open() bool { return b != nil && b.open.Load() }

// OutageSince is when the current outage began; the zero Time if none.
func (b *Breaker) OutageSince() time.Time {
	if b == nil {
		return time.Time{}
	}
	if s := b.since.Load(); s != 0 {
		return time.Unix(0, s)
	}
	return time.Time{}
}

// Why is why a call fails fast while b is open (b is not nil), for the
// caller's error.
func (b *Breaker) Why() string {
	why := "failing fast: the server has been unreachable for longer than " + b.after.String()
	if since := b.OutageSince(); !since.IsZero() {
		why = "failing fast: the server has been unreachable for " + time.Since(since).Round(time.Millisecond).String() +
			" (WithFailFastAfter " + b.after.String() + ")"
	}
	return why
}

// Stop ends the timer, at Close, and any outage told after it is
// ignored: a failure told as the client closes (a session lost as it is
// closed) arms no timer that would open the breaker after Close.
func (b *Breaker) Stop() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
}
