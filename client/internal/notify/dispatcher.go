package notify

import (
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

const (
	// notificationQueue is how many notifications may wait for slow
	// handlers before new ones are dropped.
	notificationQueue = 1024
	// notificationQueueIdle is the queue a dispatcher keeps once drained:
	// a burst's larger queue is let go, so that a client that is idle
	// costs a few hundred bytes here, not the 48 KiB of a full queue.
	notificationQueueIdle = 8
)

// Dispatcher hands notifications from the sessions' readers to the caller's
// handlers on a goroutine of its own, in the order they arrived. A reader
// never waits for a handler: that would stall every response on the session.
// When the queue is full the newest notification is dropped and counted:
// a notification is a hint to look again (a list changed, a resource was
// updated), and a handler too slow for 1024 of them has fallen behind beyond
// what queueing more of them would fix.
//
// Nothing is held for an idle client: the queue grows with a burst up to
// notificationQueue and is let go once drained, and the goroutine runs only
// while there is something to deliver.
type Dispatcher struct {
	mu       sync.Mutex // a leaf: handlers run on the delivering goroutine, never under it
	handlers []func(mcp.JSONRPCNotification)
	ring     []mcp.JSONRPCNotification // queued: ring[head], ring[head+1], … (mod len), n of them
	head, n  int
	running  chan struct{} // closed when the delivering goroutine exits; nil if none runs
	closed   bool
	dropped  atomic.Uint64
}

func NewDispatcher() *Dispatcher { return &Dispatcher{} }

func (d *Dispatcher) Add(h func(mcp.JSONRPCNotification)) {
	d.mu.Lock()
	d.handlers = append(d.handlers, h)
	d.mu.Unlock()
}

func (d *Dispatcher) HasHandlers() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.handlers) > 0
}

// Deliver queues n without blocking; it reports false if n was dropped
// because the handlers are too far behind. Without handlers, or after close,
// n goes nowhere.
func (d *Dispatcher) Deliver(n mcp.JSONRPCNotification) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || len(d.handlers) == 0 {
		return true
	}
	if d.n == len(d.ring) {
		if len(d.ring) == notificationQueue {
			d.dropped.Add(1)
			return false
		}
		d.growLocked()
	}
	d.ring[(d.head+d.n)%len(d.ring)] = n
	d.n++
	if d.running == nil {
		d.running = make(chan struct{})
		go d.run(d.running)
	}
	return true
}

// growLocked doubles the ring, up to notificationQueue, keeping the order.
func (d *Dispatcher) growLocked() {
	ring := make([]mcp.JSONRPCNotification, min(max(2*len(d.ring), notificationQueueIdle), notificationQueue))
	for i := range d.n {
		ring[i] = d.ring[(d.head+i)%len(d.ring)]
	}
	d.ring, d.head = ring, 0
}

// run delivers until the queue is empty, then exits.
func (d *Dispatcher) run(done chan struct{}) {
	defer close(done)
	for {
		d.mu.Lock()
		if d.n == 0 || d.closed {
			if len(d.ring) > notificationQueueIdle {
				d.ring, d.head, d.n = nil, 0, 0
			}
			d.running = nil
			d.mu.Unlock()
			return
		}
		n := d.ring[d.head]
		d.ring[d.head] = mcp.JSONRPCNotification{} // let it be collected
		d.head = (d.head + 1) % len(d.ring)
		d.n--
		handlers := d.handlers
		d.mu.Unlock()
		for _, h := range handlers {
			h(n)
		}
	}
}

// Queued is how many notifications wait for the handlers, and how many
// could before the newest are dropped without growing the queue.
func (d *Dispatcher) Queued() (n, capacity int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n, len(d.ring)
}

// Close stops the dispatcher, after the handler under way if any, and
// waits for it. Notifications still queued are dropped.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	d.closed = true
	d.ring, d.head, d.n = nil, 0, 0
	running := d.running
	d.mu.Unlock()
	if running != nil {
		<-running
	}
}
