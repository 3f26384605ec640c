// Package transitions delivers a client's connectivity transitions, the
// sessions it lost and its circuit breaker's openings and closings to the
// user's handlers, the logger and the observers, in order, on a goroutine
// of its own: see Notifier. It does not import the client: what it tells
// them with it reads through a Host.
package transitions

import (
	"log/slog"
	"sync"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/observe"
)

// Host is the client whose state a Notifier tells. Its methods are called
// on the Notifier's goroutine, under no lock of the Notifier's.
type Host interface {
	// Logger is the client's logger.
	Logger() *slog.Logger
	// Observers are the client's observers, told of each member's
	// transitions and of the breaker's; may be nil.
	Observers() *observers.Set
	// StateHandler is WithStateHandler's handler; may be nil.
	StateHandler() func(from, to observe.State)
}

// Notifier delivers transitions to the user's handler and logger in
// order, on a goroutine of its own that runs only while there are
// transitions to deliver, so that the handler may call the client, and
// neither it nor a slow log handler runs under the client's locks or stalls
// a reconnect.
//
// It also delivers the losses OnConnectionLost handlers are told of, in the
// same order: a loss comes after the transition away from Ready that it
// caused and before the one back.
//
// Its zero value is not ready: Init gives it its Host. It is then safe for
// concurrent use.
type Notifier struct {
	// host is the client whose state it tells: its handler (may be nil),
	// its logger, and its observers (may be nil), read through host rather
	// than copied, for the size of the client (TestClientSizeClass).
	host Host

	mu      sync.Mutex // innermost of the client's locks
	lost    []func(error)
	queue   []Event
	running bool
	done    chan struct{} // closed when the running goroutine exits
}

// Event is a transition, or a lost session when Lost is set, or a pool
// member's transition, for the observers only, when Member is set, or the
// circuit breaker opening or closing, when Breaker is set.
type Event struct {
	From, To observe.State
	Lost     error
	Member   bool
	Breaker  *observe.BreakerState
}

// Init gives n the client it tells of; before any other method.
func (n *Notifier) Init(host Host) { n.host = host }

// Notify delivers the client's transition from from to to.
func (n *Notifier) Notify(from, to observe.State) {
	n.Push(Event{From: from, To: to})
}

// NotifyLost tells the OnConnectionLost handlers, if any, that a session
// was lost because of cause.
func (n *Notifier) NotifyLost(cause error) {
	n.mu.Lock()
	none := len(n.lost) == 0
	n.mu.Unlock()
	if !none {
		n.Push(Event{Lost: cause})
	}
}

// OnLost registers h, told of every loss from now on.
func (n *Notifier) OnLost(h func(error)) {
	n.mu.Lock()
	n.lost = append(n.lost, h)
	n.mu.Unlock()
}

// Push queues e for delivery after every event pushed before it.
func (n *Notifier) Push(e Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = append(n.queue, e)
	if !n.running {
		n.running = true
		n.done = make(chan struct{})
		go n.drain(n.done)
	}
}

func (n *Notifier) drain(done chan struct{}) {
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
		if e.Lost != nil {
			for _, h := range lost {
				h(e.Lost)
			}
			continue
		}
		if e.Member {
			n.host.Observers().MemberChanged(e.From, e.To)
			continue
		}
		if b := e.Breaker; b != nil {
			if b.Open {
				n.host.Logger().Warn("circuit breaker open: the server has been unreachable too long; calls fail fast until a session is back", "outage_since", b.OutageSince)
			} else {
				n.host.Logger().Info("circuit breaker closed: a session is back", "outage", time.Since(b.OutageSince).Round(time.Millisecond))
			}
			n.host.Observers().BreakerChanged(*b)
			continue
		}
		n.host.Logger().Debug("state", "from", e.From, "to", e.To)
		if h := n.host.StateHandler(); h != nil {
			h(e.From, e.To)
		}
	}
}

// Wait returns once every transition notified so far has been delivered.
func (n *Notifier) Wait() {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done != nil {
		<-done
	}
}
