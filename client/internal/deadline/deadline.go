// Package deadline gives calls made with context.Background() or
// context.TODO() their call timeout's deadline without a context each: see
// Shared. It knows nothing of MCP or of the client.
package deadline

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineSlack is how much later than WithCallTimeout a call made with a
// bare context may end, as a fraction of the timeout: calls share a
// deadline context for a 1/deadlineSlack slice of the timeout.
const deadlineSlack = 16

// Shared gives calls made with context.Background() or
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
// The current context of each slice is one of deadlineShards, the call
// taking one at random: every request of a call registers a child with its
// call's context (mcp-go's own cancelCtx), under that context's lock, so
// that 256 calls in flight on one context wait for each other there, as
// they do not on a bare one.
//
// A Shared is safe for concurrent use.
type Shared struct {
	timeout time.Duration
	slack   time.Duration

	// shards are made by the first call with a bare context, so that a
	// client that makes none (an idle one) does not hold them (64 B), and
	// let go of, with each shard's context, once that context has ended
	// (drop): a client that made such calls and went idle holds neither.
	shards atomic.Pointer[[deadlineShards]deadlineShard]
	mu     sync.Mutex // serializes making shards, a new current and Close; a leaf
	closed bool       // guarded by mu
}

// deadlineShards is how many current contexts calls share at a time.
const deadlineShards = 8

// deadlineShard is one current context. The shards share a cache line:
// a shard's pointer is written once per slice of time (timeout/16) and
// read by every call, so the line is seldom invalidated, and padding each
// to a line of its own would cost every client that makes such calls 448 B.
type deadlineShard struct {
	current atomic.Pointer[deadlineCtx]
}

type deadlineCtx struct {
	ctx      context.Context
	deadline time.Time
	// cancel is called by Close only: the context's timer cancels it at
	// the deadline.
	cancel context.CancelFunc
}

// New returns the shared deadlines of calls whose timeout is timeout.
func New(timeout time.Duration) *Shared {
	return &Shared{timeout: timeout, slack: timeout / deadlineSlack}
}

// Close ends the current contexts, and every one Get returns from now on:
// the client is closed. The contexts are not children of the client's
// lifetime, which would cost the client, for as long as it lives, a map of
// children and a Done channel (300 B of an idle client's 8 KB).
func (d *Shared) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	shards := d.shards.Load()
	if shards == nil {
		return
	}
	for i := range shards {
		if cur := shards[i].current.Load(); cur != nil {
			cur.cancel()
		}
	}
}

// Get returns a context whose deadline is between timeout and
// timeout+slack from now, ended already after Close. Each context ends by
// itself at its deadline (or at Close), so none is kept beyond that.
func (d *Shared) Get() context.Context { return d.getOf(rand.N(deadlineShards)) }

// getOf is Get from shard i.
func (d *Shared) getOf(i int) context.Context {
	due := time.Now().Add(d.timeout)
	shards := d.shards.Load()
	if shards != nil {
		if cur := shards[i].current.Load(); cur != nil && !cur.deadline.Before(due) {
			return cur.ctx
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if shards = d.shards.Load(); shards == nil {
		shards = new([deadlineShards]deadlineShard)
		d.shards.Store(shards)
	}
	shard := &shards[i]
	if cur := shard.current.Load(); cur != nil && !cur.deadline.Before(due) {
		return cur.ctx
	}
	deadline := due.Add(d.slack)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	if d.closed {
		cancel()
	}
	cur := &deadlineCtx{ctx: ctx, deadline: deadline, cancel: cancel}
	shard.current.Store(cur)
	// Once a slice of time, not once a call.
	context.AfterFunc(ctx, func() { d.drop(shards, shard, cur) })
	return ctx
}

// drop lets go of cur, which has ended (at its deadline, or Close), and of
// the shards once none of them holds a context: the next call makes them
// again. An ended context is never returned, so only a client that makes
// no more calls would have kept it: an idle one, for which the context,
// its timer and Done channel, the map of children the calls' requests
// registered with it and the shards came to 0.5 KB (BenchmarkIdleClients,
// a client initialized with context.Background()).
func (d *Shared) drop(shards *[deadlineShards]deadlineShard, shard *deadlineShard, cur *deadlineCtx) {
	d.mu.Lock()
	defer d.mu.Unlock()
	shard.current.CompareAndSwap(cur, nil)
	for i := range shards {
		if shards[i].current.Load() != nil {
			return
		}
	}
	d.shards.CompareAndSwap(shards, nil)
}
