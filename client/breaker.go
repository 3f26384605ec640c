package client

import (
	"context"
	"errors"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/breaker"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/transitions"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/pool"
)

// The client's circuit breaker (WithFailFastAfter) is client/internal/breaker;
// what stays here joins it to the sessions: it is made on the first
// outage, told of each outcome (noteOutcome), and asked by the calls
// waiting for a session (whileNoSession).

// outage is the client's breaker, made on first need; nil with the breaker
// off.
func (ss *sessions) outage() *breaker.Breaker {
	if ss.c.opts.failFastAfter == 0 {
		return nil
	}
	if b := ss.brk.Load(); b != nil {
		return b
	}
	// Its openings and closings go to the state notifier (and through it
	// the log and the observers); an opening wakes the pool's waiters.
	changed := func(open bool, since time.Time) {
		ss.notifier.Push(transitions.Event{Breaker: &observe.BreakerState{Open: open, OutageSince: since}})
	}
	ss.brk.CompareAndSwap(nil, breaker.New(ss.c.opts.failFastAfter, changed, ss.pool.Wake))
	return ss.brk.Load()
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
	switch policy.WhileNoSession(failFast, w.Failed, b.Open()) {
	case policy.FailFastNoSession:
		return &failedFast{why: "no session, and the last dial failed (FailFast)", last: w.Last}
	case policy.FailFastOutage:
		return &failedFast{why: b.Why(), last: w.Last}
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
			ss.outage().Failed(time.Now())
		}
	case v.Class == policy.ServerError, v.Class == policy.AuthRequired, v.Class == policy.Expired, v.Class == policy.Rejected, v.Busy:
		ss.brk.Load().Reached()
	}
}

// anyReady reports whether a session is in service.
func (ss *sessions) anyReady() bool {
	for i := range ss.members {
		if transitions.FromPool(pool.State(ss.members[i].pool.Load())) == Ready {
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
