package reconnect

import (
	"sync"
	"time"
)

// Budget caps retries across every goroutine that shares it, after
// Finagle's RetryBudget: each call deposits Percent of a token, each retry
// withdraws a whole one, and a reserve of MinPerSecond tokens a second lets a
// quiet client still retry. Over a window the retries are bounded by
// Percent of the calls plus MinPerSecond, so a server that fails every
// request sees about 1+Percent times the load, not MaxAttempts times; while
// a burst of failures with one cause (64 calls in flight when a server
// restarts) is absorbed by the balance built up before it.
//
// gRPC's token bucket was the other candidate; it throttles on failures
// counted one by one, so a single restart that fails every call in flight at
// once empties it, and the calls that could simply have been retried fail.
//
// A Budget is safe for concurrent use. Use NewBudget; the zero value allows
// nothing.
type Budget struct {
	mu        sync.Mutex
	balance   float64
	max       float64
	percent   float64
	perSecond float64
	last      time.Time
}

// DefaultBudget is Finagle's default: 20% of calls, a reserve of 10 retries
// a second, at most a 10 second window's worth saved up.
func DefaultBudget() *Budget { return NewBudget(10*time.Second, 10, 0.2) }

// NewBudget returns a full Budget that saves up at most window's worth of
// the reserve.
func NewBudget(window time.Duration, minPerSecond, percent float64) *Budget {
	max := minPerSecond * window.Seconds()
	return &Budget{balance: max, max: max, percent: percent, perSecond: minPerSecond, last: time.Now()}
}

// Deposit records a call.
func (b *Budget) Deposit() {
	b.mu.Lock()
	b.refillLocked()
	b.balance = min(b.max, b.balance+b.percent)
	b.mu.Unlock()
}

// TryWithdraw reports whether a retry may be made now, and if so pays for it.
func (b *Budget) TryWithdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
	if b.balance < 1 {
		return false
	}
	b.balance--
	return true
}

// Balance reports the retries that may be made now, for tests and stats.
func (b *Budget) Balance() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
	return b.balance
}

func (b *Budget) refillLocked() {
	now := time.Now()
	b.balance = min(b.max, b.balance+now.Sub(b.last).Seconds()*b.perSecond)
	b.last = now
}
