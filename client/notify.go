package client

import (
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// notificationQueue is how many notifications may wait for slow handlers
// before new ones are dropped.
const notificationQueue = 1024

// dispatcher hands notifications from the sessions' readers to the caller's
// handlers on a goroutine of its own, in the order they arrived. A reader
// never waits for a handler: that would stall every response on the session.
// When the queue is full the newest notification is dropped and counted:
// a notification is a hint to look again (a list changed, a resource was
// updated), and a handler too slow for 1024 of them has fallen behind beyond
// what replaying them would fix.
type dispatcher struct {
	mu       sync.RWMutex
	handlers []func(mcp.JSONRPCNotification)
	queue    chan mcp.JSONRPCNotification
	stop     chan struct{}
	done     chan struct{}
	start    sync.Once
	dropped  atomic.Uint64
}

func newDispatcher() *dispatcher {
	return &dispatcher{
		queue: make(chan mcp.JSONRPCNotification, notificationQueue),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

func (d *dispatcher) add(h func(mcp.JSONRPCNotification)) {
	d.mu.Lock()
	d.handlers = append(d.handlers, h)
	d.mu.Unlock()
	d.start.Do(func() { go d.run() })
}

func (d *dispatcher) hasHandlers() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.handlers) > 0
}

// deliver queues n without blocking; it reports false if n was dropped.
func (d *dispatcher) deliver(n mcp.JSONRPCNotification) bool {
	select {
	case d.queue <- n:
		return true
	default:
		d.dropped.Add(1)
		return false
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		select {
		case n := <-d.queue:
			d.mu.RLock()
			handlers := d.handlers
			d.mu.RUnlock()
			for _, h := range handlers {
				h(n)
			}
		case <-d.stop:
			return
		}
	}
}

// close stops the dispatcher, after the handler under way if any, and
// waits for it. Notifications still queued are dropped.
func (d *dispatcher) close() {
	d.start.Do(func() { close(d.done) }) // never started: nothing to wait for
	close(d.stop)
	<-d.done
}
