package client

import (
	"sync"
	"sync/atomic"
	"time"

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

func fromPoolState(s pool.State) State {
	switch s {
	case pool.Connecting:
		return Connecting
	case pool.Ready:
		return Ready
	case pool.Reconnecting:
		return Reconnecting
	case pool.Closed:
		return Closed
	}
	return Idle
}

// rank orders states from worst to best, for the client's state: the best
// among its sessions.
func rank(s State) int {
	switch s {
	case Ready:
		return 5
	case Degraded:
		return 4
	case Reconnecting:
		return 3
	case Connecting:
		return 2
	case Idle:
		return 1
	}
	return 0
}

// stateNotifier delivers transitions to the user's handler and logger in
// order, on a goroutine of its own that runs only while there are
// transitions to deliver, so that the handler may call the client, and
// neither it nor a slow log handler runs under the client's locks or stalls
// a reconnect.
//
// It also delivers the losses OnConnectionLost handlers are told of, in the
// same order: a loss comes after the transition away from Ready that it
// caused and before the one back.
type stateNotifier struct {
	// c is the client whose state it tells: its handler
	// (WithStateHandler, may be nil), its logger, and its observers (told
	// of each member's transitions; may be nil), read through c rather
	// than copied, for the size of the client (TestClientSizeClass).
	c *ResilientClient

	mu      sync.Mutex // innermost of the client's locks
	lost    []func(error)
	queue   []stateEvent
	running bool
	done    chan struct{} // closed when the running goroutine exits
}

// stateEvent is a transition, or a lost session when lost is set, or a
// pool member's transition, for the observers only, when member is set, or
// the circuit breaker opening or closing, when breaker is set.
type stateEvent struct {
	from, to State
	lost     error
	member   bool
	breaker  *observe.BreakerState
}

func (n *stateNotifier) notify(from, to State) {
	n.push(stateEvent{from: from, to: to})
}

// notifyLost tells the OnConnectionLost handlers, if any, that a session
// was lost because of cause.
func (n *stateNotifier) notifyLost(cause error) {
	n.mu.Lock()
	none := len(n.lost) == 0
	n.mu.Unlock()
	if !none {
		n.push(stateEvent{lost: cause})
	}
}

func (n *stateNotifier) onLost(h func(error)) {
	n.mu.Lock()
	n.lost = append(n.lost, h)
	n.mu.Unlock()
}

func (n *stateNotifier) push(e stateEvent) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = append(n.queue, e)
	if !n.running {
		n.running = true
		n.done = make(chan struct{})
		go n.drain(n.done)
	}
}

func (n *stateNotifier) drain(done chan struct{}) {
	defer close(done)
	for {
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.running = false
			n.queue = nil // an idle client keeps no queue
			n.done = nil  // nor a channel: closed below, it waits for nothing more
			n.mu.Unlock()
			return
		}
		e := n.queue[0]
		n.queue = n.queue[1:]
		lost := n.lost
		n.mu.Unlock()
		if e.lost != nil {
			for _, h := range lost {
				h(e.lost)
			}
			continue
		}
		if e.member {
			n.c.obs.MemberChanged(e.from, e.to)
			continue
		}
		if b := e.breaker; b != nil {
			if b.Open {
				n.c.log.Warn("circuit breaker open: the server has been unreachable too long; calls fail fast until a session is back", "outage_since", b.OutageSince)
			} else {
				n.c.log.Info("circuit breaker closed: a session is back", "outage", time.Since(b.OutageSince).Round(time.Millisecond))
			}
			n.c.obs.BreakerChanged(*b)
			continue
		}
		n.c.log.Debug("state", "from", e.from, "to", e.to)
		if h := n.c.opts.stateHandler; h != nil {
			h(e.from, e.to)
		}
	}
}

// wait returns once every transition notified so far has been delivered.
func (n *stateNotifier) wait() {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done != nil {
		<-done
	}
}

// memberState is what State is computed from, for one pool member.
type memberState struct {
	pool     atomic.Int32 // pool.State
	degraded atomic.Bool  // its session in service is failing probes
	observed atomic.Int32 // State, as last told to the observers
	affinity affinity     // see affinity.go
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
		st := fromPoolState(pool.State(m.pool.Load()))
		if st == Ready && m.degraded.Load() {
			st = Degraded
		}
		ss.c.noteMember(m, st)
		if next == Closed || rank(st) > rank(next) {
			next = st
		}
	}
	if prev := State(ss.state.Swap(int32(next))); prev != next {
		// Logged by the notifier too: the logger's handler is the user's
		// code, and this runs under the pool's lock.
		ss.notifier.notify(prev, next)
	}
}
