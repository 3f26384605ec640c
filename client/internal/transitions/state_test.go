package transitions

import (
	"testing"

	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/pool"
)

func TestFromPool(t *testing.T) {
	for in, want := range map[pool.State]observe.State{
		pool.Idle: observe.Idle, pool.Connecting: observe.Connecting, pool.Ready: observe.Ready,
		pool.Reconnecting: observe.Reconnecting, pool.Closed: observe.Closed,
	} {
		if got := FromPool(in); got != want {
			t.Errorf("FromPool(%v) = %v, want %v", in, got, want)
		}
	}
}

// The client's state is the best of its members': worst to best.
func TestBetterOrdersStates(t *testing.T) {
	order := []observe.State{observe.Closed, observe.Idle, observe.Connecting, observe.Reconnecting, observe.Degraded, observe.Ready}
	for i := range order {
		for j := range order {
			if got, want := Better(order[i], order[j]), i > j; got != want {
				t.Errorf("Better(%v, %v) = %v, want %v", order[i], order[j], got, want)
			}
		}
	}
}
