package reconnect

import "sync"

// Budget caps retries across every goroutine that shares it, as gRPC's retry
// throttling does: each failed attempt takes a token, each success gives back
// Ratio of one, and retries are allowed only while more than half the tokens
// remain. A healthy server keeps the bucket full; a failing one drains it
// after a handful of failures, after which calls fail fast instead of
// multiplying the load on a server that is trying to come back.
//
// A Budget is safe for concurrent use. The zero value is not usable: use
// NewBudget.
type Budget struct {
	mu     sync.Mutex
	tokens float64
	max    float64
	ratio  float64
}

// DefaultBudget returns a Budget of 10 tokens that refills a tenth of a token
// per success (gRPC's documented example).
func DefaultBudget() *Budget { return NewBudget(10, 0.1) }

// NewBudget returns a full Budget of max tokens refilled ratio per success.
func NewBudget(max, ratio float64) *Budget {
	return &Budget{tokens: max, max: max, ratio: ratio}
}

// Success returns ratio of a token to the bucket.
func (b *Budget) Success() {
	b.mu.Lock()
	b.tokens = min(b.max, b.tokens+b.ratio)
	b.mu.Unlock()
}

// Failure takes a token from the bucket.
func (b *Budget) Failure() {
	b.mu.Lock()
	b.tokens = max(0, b.tokens-1)
	b.mu.Unlock()
}

// AllowRetry reports whether a failed attempt may be retried now.
func (b *Budget) AllowRetry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens > b.max/2
}

// Tokens reports the tokens left, for tests and stats.
func (b *Budget) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}
