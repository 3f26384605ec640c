package client

import (
	"log/slog"
	"sync/atomic"

	"github.com/resilientmcp/resilientmcp/client/internal/affinity"
	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/internal/transitions"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/pool"
)

// State is the connectivity of a ResilientClient, after grpc-go's
// connectivity states: observe.State, declared there with its states for
// the observers' observe.SessionState.
type State = observe.State

// The states, under client's names: observe's.
const (
	Idle         = observe.Idle
	Connecting   = observe.Connecting
	Ready        = observe.Ready
	Degraded     = observe.Degraded
	Reconnecting = observe.Reconnecting
	Closed       = observe.Closed
)

// notifierHost is the client as its state notifier
// (transitions.Notifier) reads it.
type notifierHost ResilientClient

func (h *notifierHost) Logger() *slog.Logger               { return h.log }
func (h *notifierHost) Observers() *observers.Set          { return h.obs }
func (h *notifierHost) StateHandler() func(from, to State) { return h.opts.stateHandler }

// memberState is what State is computed from, for one pool member.
type memberState struct {
	pool     atomic.Int32    // pool.State
	degraded atomic.Bool     // its session in service is failing probes
	observed atomic.Int32    // State, as last told to the observers
	affinity affinity.Member // client/internal/affinity
}

// onMemberState is called with the pool's lock held: it must not call the
// pool.
func (ss *sessions) onMemberState(member int, _, to pool.State) {
	ss.members[member].pool.Store(int32(to))
	if to == pool.Ready {
		ss.members[member].degraded.Store(false) // a new session has failed nothing yet
		ss.brk.Load().Reached()
	}
	ss.refreshState()
}

// refreshState recomputes State, the best state among the members, and
// reports a change.
func (ss *sessions) refreshState() {
	ss.stateMu.Lock()
	defer ss.stateMu.Unlock()
	next := Closed
	for i := range ss.members {
		m := &ss.members[i]
		st := transitions.FromPool(pool.State(m.pool.Load()))
		if st == Ready && m.degraded.Load() {
			st = Degraded
		}
		ss.c.noteMember(m, st)
		if next == Closed || transitions.Better(st, next) {
			next = st
		}
	}
	if prev := State(ss.state.Swap(int32(next))); prev != next {
		// Logged by the notifier too: the logger's handler is the user's
		// code, and this runs under the pool's lock.
		ss.notifier.Notify(prev, next)
	}
}
