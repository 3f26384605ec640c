package retry

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Budget caps retries across every goroutine that shares it, after
// Finagle's RetryBudget: each call deposits Percent of a token, each retry
// withdraws a whole one, and a reserve refilled at MinPerSecond tokens a
// second lets a quiet client still retry. Deposits count for about one
// window (they decay with that time constant), so the balance is about
// Percent of the calls of the last window plus the reserve. A server that
// fails every request therefore sees about 1+Percent times the load, not
// MaxAttempts times; while a burst of failures with one cause (every call in
// flight when a server restarts) is paid for by the calls before it.
//
// gRPC's token bucket was the other candidate; it counts failures one by
// one against a fixed bucket, so a single restart that fails a few hundred
// calls in flight at once empties it, and calls that could simply have been
// retried fail.
//
// A Budget is safe for concurrent use. Use NewBudget; the zero value allows
// nothing.
//
// A deposit takes no lock: every call of a client makes one, from every
// goroutine at once, while withdrawals are rare (a retry). Deposits are
// counted in an atomic and folded into the decaying balance under the lock
// by the first deposit after each foldStep of the window, and by every
// withdrawal: a deposit counts as made at most foldStep later than it was,
// which overstates it by at most e^(1/64), 1.6%.
type Budget struct {
	pending atomic.Int64 // deposits since the last fold, not yet in deposits
	foldAt  atomic.Int64 // since start: when a deposit next folds

	mu         sync.Mutex // guards the fields below; the Budget's only lock, a leaf
	deposits   float64    // from recent calls, decaying
	reserve    float64    // refilled with time, up to maxReserve
	maxReserve float64
	window     time.Duration
	percent    float64
	perSecond  float64
	start      time.Time     // the monotonic origin of last and foldAt
	last       time.Duration // since start: the last fold
}

// foldSteps is how many folds of pending deposits a window has at most.
const foldSteps = 64

// DefaultBudget is Finagle's default: 20% of the calls of the last 10
// seconds, plus a reserve of 10 retries a second saved up for 10 seconds.
func DefaultBudget() *Budget { return NewBudget(10*time.Second, 10, 0.2) }

// NewBudget returns a Budget with a full reserve and no deposits.
func NewBudget(window time.Duration, minPerSecond, percent float64) *Budget {
	max := minPerSecond * window.Seconds()
	return &Budget{reserve: max, maxReserve: max, window: window, percent: percent, perSecond: minPerSecond, start: time.Now()}
}

// Deposit records a call.
func (b *Budget) Deposit() {
	b.pending.Add(1)
	if now := time.Since(b.start); int64(now) >= b.foldAt.Load() && b.mu.TryLock() {
		// One depositor folds; the others go on (their deposits are
		// folded by the next).
		b.foldLocked(now)
		b.mu.Unlock()
	}
}

// TryWithdraw reports whether a retry may be made now, and if so pays for
// it, from the deposits first.
func (b *Budget) TryWithdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.foldLocked(time.Since(b.start))
	switch {
	case b.deposits >= 1:
		b.deposits--
	case b.reserve >= 1:
		b.reserve--
	default:
		return false
	}
	return true
}

// balance reports the retries that may be made now (the package's tests read it).
func (b *Budget) balance() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.foldLocked(time.Since(b.start))
	return math.Floor(b.deposits) + math.Floor(b.reserve)
}

// foldLocked brings the balance to now: the deposits decay, the pending
// ones join them, the reserve refills.
func (b *Budget) foldLocked(now time.Duration) {
	dt := max(0, now-b.last)
	b.last = now
	step := b.window / foldSteps
	b.foldAt.Store(int64(now + step))
	b.deposits *= math.Exp(-dt.Seconds() / b.window.Seconds())
	if n := b.pending.Swap(0); n > 0 {
		// Made since the last fold, and but for a depositor that found
		// the lock taken, before the step after it: decayed from there.
		b.deposits += float64(n) * b.percent * math.Exp(-max(0, dt-step).Seconds()/b.window.Seconds())
	}
	b.reserve = min(b.maxReserve, b.reserve+dt.Seconds()*b.perSecond)
}
