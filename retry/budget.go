package retry

import (
	"math"
	"sync"
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
type Budget struct {
	mu         sync.Mutex // guards the fields below; the Budget's only lock, a leaf
	deposits   float64    // from recent calls, decaying
	reserve    float64    // refilled with time, up to maxReserve
	maxReserve float64
	window     time.Duration
	percent    float64
	perSecond  float64
	last       time.Time
}

// DefaultBudget is Finagle's default: 20% of the calls of the last 10
// seconds, plus a reserve of 10 retries a second saved up for 10 seconds.
func DefaultBudget() *Budget { return NewBudget(10*time.Second, 10, 0.2) }

// NewBudget returns a Budget with a full reserve and no deposits.
func NewBudget(window time.Duration, minPerSecond, percent float64) *Budget {
	max := minPerSecond * window.Seconds()
	return &Budget{reserve: max, maxReserve: max, window: window, percent: percent, perSecond: minPerSecond, last: time.Now()}
}

// Deposit records a call.
func (b *Budget) Deposit() {
	b.mu.Lock()
	b.refillLocked()
	b.deposits += b.percent
	b.mu.Unlock()
}

// TryWithdraw reports whether a retry may be made now, and if so pays for
// it, from the deposits first.
func (b *Budget) TryWithdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
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
	b.refillLocked()
	return math.Floor(b.deposits) + math.Floor(b.reserve)
}

func (b *Budget) refillLocked() {
	now := time.Now()
	dt := now.Sub(b.last)
	b.last = now
	b.deposits *= math.Exp(-dt.Seconds() / b.window.Seconds())
	b.reserve = min(b.maxReserve, b.reserve+dt.Seconds()*b.perSecond)
}
