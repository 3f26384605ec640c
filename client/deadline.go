package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineSlack is how much later than WithCallTimeout a call made with a
// bare context may end, as a fraction of the timeout: calls share a
// deadline context for a 1/deadlineSlack slice of the timeout.
const deadlineSlack = 16

// sharedDeadlines gives calls made with context.Background() or
// context.TODO() their WithCallTimeout deadline without a context each.
//
// Why: such a context carries nothing to inherit, so calls may share one;
// and a context made and cancelled per call measurably costs: about 3% of a
// loopback call's time and 7 allocations (BenchmarkCallLatency,
// ctx=background, when this was written; BENCHMARKS.md does not keep the
// figure). Calls that
// start within the same slice of time get the same context, whose deadline
// is at least the timeout away and at most timeout/deadlineSlack later.
//
// A sharedDeadlines is safe for concurrent use.
type sharedDeadlines struct {
	timeout time.Duration
	slack   time.Duration

	current atomic.Pointer[deadlineCtx]
	mu      sync.Mutex // serializes making a new current and close; a leaf
	closed  bool       // guarded by mu
}

type deadlineCtx struct {
	ctx      context.Context
	deadline time.Time
	// cancel is called by close only: the context's timer cancels it at
	// the deadline.
	cancel context.CancelFunc
}

func newSharedDeadlines(timeout time.Duration) *sharedDeadlines {
	return &sharedDeadlines{timeout: timeout, slack: timeout / deadlineSlack}
}

// close ends the current context, and every one get returns from now on:
// the client is closed. The contexts are not children of the client's
// lifetime, which would cost the client, for as long as it lives, a map of
// children and a Done channel (300 B of an idle client's 8 KB).
func (d *sharedDeadlines) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if cur := d.current.Load(); cur != nil {
		cur.cancel()
	}
}

// get returns a context whose deadline is between timeout and
// timeout+slack from now, ended already after close. Each context ends by
// itself at its deadline (or at close), so none is kept beyond that.
func (d *sharedDeadlines) get() context.Context {
	due := time.Now().Add(d.timeout)
	if cur := d.current.Load(); cur != nil && !cur.deadline.Before(due) {
		return cur.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur := d.current.Load(); cur != nil && !cur.deadline.Before(due) {
		return cur.ctx
	}
	deadline := due.Add(d.slack)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	if d.closed {
		cancel()
	}
	d.current.Store(&deadlineCtx{ctx: ctx, deadline: deadline, cancel: cancel})
	return ctx
}
