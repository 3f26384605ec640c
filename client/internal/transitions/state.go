package transitions

import (
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/pool"
)

// FromPool is the state of a pool member whose pool state is s (Degraded
// is the client's own: a Ready member failing probes).
func FromPool(s pool.State) observe.State {
	switch s {
	case pool.Connecting:
		return observe.Connecting
	case pool.Ready:
		return observe.Ready
	case pool.Reconnecting:
		return observe.Reconnecting
	case pool.Closed:
		return observe.Closed
	}
	return observe.Idle
}

// Better reports whether a is a better state than b: the client's state is
// the best among its members'.
func Better(a, b observe.State) bool { return rank(a) > rank(b) }

// rank orders the states from worst to best.
func rank(s observe.State) int {
	switch s {
	case observe.Ready:
		return 5
	case observe.Degraded:
		return 4
	case observe.Reconnecting:
		return 3
	case observe.Connecting:
		return 2
	case observe.Idle:
		return 1
	}
	return 0
}
