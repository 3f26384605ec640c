package client

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// breaker is the client's circuit breaker (WithFailFastAfter): it follows
// how long the server has been unreachable with no session in service, and
// once that is longer than after, calls fail at once with ErrUnavailable
// until the reconnect loop has a session again. The reconnect loop is its
// half-open probe: no call is spent finding out that the server is back.
//
// The outage is counted from the first failure that left the client with
// no session in service (a call's, a probe's or a dial's) and that says
// the server could not be reached or failed as a whole (policy's
// Verdict.Outage); an answer that proves the server is there, or a
// session in service, ends it.
//
// A breaker is safe for concurrent use. An idle client's costs a few
// words: the timer exists only during an outage.
type breaker struct {
	after time.Duration // 0: off
	// since is when the outage began, in UnixNano; 0: none.
	since atomic.Int64
	open  atomic.Bool
	// onChange is told when the breaker opens or closes, under mu, so
	// that it is told in order (it logs and tells the observers, which
	// must return quickly); wake is called when it opens, after mu is
	// released, so that calls waiting for a session ask again whether to
	// go on.
	onChange func(open bool, since time.Time)
	wake     func()

	// mu orders outage starts, ends and trips. Taken under the pool's lock
	// (reached, from the client's onMemberState), so nothing that takes
	// the pool's lock is called under it: wake is called after it.
	mu    sync.Mutex
	timer *time.Timer // trips the breaker at since+after
}

// failed is told of a failure that counts as an outage, at a moment when
// no session is in service.
func (b *breaker) failed(at time.Time) {
	if b.after == 0 || b.since.Load() != 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since.Load() != 0 {
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
func (b *breaker) trip() {
	b.mu.Lock()
	since := b.since.Load()
	if since == 0 || b.open.Load() || !policy.BreakerOpen(time.Unix(0, since), b.after, time.Now()) {
		b.mu.Unlock()
		return
	}
	b.open.Store(true)
	if b.onChange != nil {
		b.onChange(true, time.Unix(0, since))
	}
	b.mu.Unlock()
	if b.wake != nil {
		b.wake()
	}
}

// reached is told that the server is there: a session went into service,
// or the server answered as only a live server does.
func (b *breaker) reached() {
	if b.since.Load() == 0 {
		return
	}
	b.mu.Lock()
	since := b.since.Swap(0)
	wasOpen := b.open.Swap(false)
	if b.timer != nil {
		b.timer.Stop()
	}
	if wasOpen && b.onChange != nil {
		b.onChange(false, time.Unix(0, since))
	}
	b.mu.Unlock()
}

// isOpen reports whether calls fail fast now.
func (b *breaker) isOpen() bool { return b.open.Load() }

// outageSince is when the current outage began; the zero Time if none.
func (b *breaker) outageSince() time.Time {
	if s := b.since.Load(); s != 0 {
		return time.Unix(0, s)
	}
	return time.Time{}
}

// stop ends the timer, at Close.
func (b *breaker) stop() {
	b.mu.Lock()
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
}
