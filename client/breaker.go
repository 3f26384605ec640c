package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/pool"
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
// A breaker is safe for concurrent use, and its methods are safe on a nil
// breaker: a client has none until its first outage (outage), so an idle
// client that never lost its server pays a pointer for it.
type breaker struct {
	ss    *sessions
	after time.Duration // WithFailFastAfter
	// since is when the outage began, in UnixNano; 0: none.
	since atomic.Int64
	open  atomic.Bool

	// mu orders outage starts, ends and trips. Taken under the pool's lock
	// (reached, from the client's onMemberState), so nothing that takes
	// the pool's lock is called under it: the pool is woken after it is
	// released. The notifier's lock is taken under it, so that openings
	// and closings are told in order.
	mu    sync.Mutex
	timer *time.Timer // trips the breaker at since+after
}

// outage is the client's breaker, made on first need; nil with the breaker
// off.
func (ss *sessions) outage() *breaker {
	if ss.c.opts.failFastAfter == 0 {
		return nil
	}
	if b := ss.brk.Load(); b != nil {
		return b
	}
	ss.brk.CompareAndSwap(nil, &breaker{ss: ss, after: ss.c.opts.failFastAfter})
	return ss.brk.Load()
}

// changed tells the state notifier (and through it the log and the
// observers) that the breaker opened or closed; under mu.
func (b *breaker) changed(open bool, since time.Time) {
	b.ss.notifier.push(stateEvent{breaker: &observe.BreakerState{Open: open, OutageSince: since}})
}

// failed is told of a failure that counts as an outage, at a moment when
// no session is in service.
func (b *breaker) failed(at time.Time) {
	if b == nil || b.since.Load() != 0 {
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
	b.changed(true, time.Unix(0, since))
	b.mu.Unlock()
	b.ss.pool.Wake()
}

// reached is told that the server is there: a session went into service,
// or the server answered as only a live server does.
func (b *breaker) reached() {
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

// isOpen reports whether calls fail fast now.
func (b *breaker) isOpen() bool { return b != nil && b.open.Load() }

// outageSince is when the current outage began; the zero Time if none.
func (b *breaker) outageSince() time.Time {
	if b == nil {
		return time.Time{}
	}
	if s := b.since.Load(); s != 0 {
		return time.Unix(0, s)
	}
	return time.Time{}
}

// stop ends the timer, at Close.
func (b *breaker) stop() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
}

// failedFast is why a call stopped waiting for a session short of its
// deadline (policy.WhileNoSession): the caller's error says it, with the
// last attempt's error.
type failedFast struct {
	why  string
	last error
}

func (e *failedFast) Error() string { return e.why }

// whileNoSession is the pool's StopWaiting: asked by a call waiting for a
// session (ctx is the call's), each time the pool changes; nil to go on
// waiting.
func (ss *sessions) whileNoSession(ctx context.Context, w pool.Waiting) error {
	if err := ss.crashLoopFailFast(); err != nil {
		return err
	}
	failFast := false
	if o := callOptionsOf(ctx); o != nil {
		failFast = o.failFast
	}
	b := ss.brk.Load()
	switch policy.WhileNoSession(failFast, w.Failed, b.isOpen()) {
	case policy.FailFastNoSession:
		return &failedFast{why: "no session, and the last dial failed (FailFast)", last: w.Last}
	case policy.FailFastOutage:
		why := "failing fast: the server has been unreachable for longer than " + b.after.String()
		if since := b.outageSince(); !since.IsZero() {
			why = "failing fast: the server has been unreachable for " + time.Since(since).Round(time.Millisecond).String() +
				" (WithFailFastAfter " + b.after.String() + ")"
		}
		return &failedFast{why: why, last: w.Last}
	}
	return nil
}

// noteOutcome tells the circuit breaker what a failure says of the
// server: an outage, if it left no session in service; that the server is
// there, if it answered as only a live server does.
func (ss *sessions) noteOutcome(v policy.Verdict) {
	switch {
	case v.Outage():
		if !ss.anyReady() {
			ss.outage().failed(time.Now())
		}
	case v.Class == policy.ServerError, v.Class == policy.AuthRequired, v.Class == policy.Expired, v.Class == policy.Rejected, v.Busy:
		ss.brk.Load().reached()
	}
}

// anyReady reports whether a session is in service.
func (ss *sessions) anyReady() bool {
	for i := range ss.members {
		if fromPoolState(pool.State(ss.members[i].pool.Load())) == Ready {
			return true
		}
	}
	return false
}

// dialVerdict is what a failed dial (opening a session or getting the
// kept one back) says of the server. A dial that ran out of its connect
// timeout met a server that does not answer, unless the client was
// closing.
func dialVerdict(err error, closing bool) policy.Verdict {
	if pe := new(probeError); errors.As(err, &pe) {
		return pe.verdict
	}
	if oe := new(openError); errors.As(err, &oe) {
		if oe.verdict.Class == policy.Caller && !closing {
			return policy.Verdict{Class: policy.OutcomeUnknown}
		}
		return oe.verdict
	}
	if errors.Is(err, context.DeadlineExceeded) && !closing {
		return policy.Verdict{Class: policy.OutcomeUnknown}
	}
	return policy.Classify(err, policy.Session{}, nil, false)
}
