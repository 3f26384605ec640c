package retry

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The default schedule: 100ms, 160ms, 256ms, ... up to 10s, each ±20%.
// The first step is short because most outages a client meets are a server
// restarting; the cap keeps a long outage from costing more than one attempt
// every ten seconds.
const (
	DefaultInitialInterval     = 100 * time.Millisecond
	DefaultMultiplier          = 1.6
	DefaultRandomizationFactor = 0.2
	DefaultMaxInterval         = 10 * time.Second
)

// DefaultBackOff returns a fresh exponential BackOff with the default
// schedule and no maximum elapsed time: how long to keep trying is the
// caller's context's business, not the schedule's.
func DefaultBackOff() backoff.BackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(DefaultInitialInterval),
		backoff.WithMultiplier(DefaultMultiplier),
		backoff.WithRandomizationFactor(DefaultRandomizationFactor),
		backoff.WithMaxInterval(DefaultMaxInterval),
		backoff.WithMaxElapsedTime(0),
	)
}
