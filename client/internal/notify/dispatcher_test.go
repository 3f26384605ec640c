package notify

import (
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func note(i int) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{Notification: mcp.Notification{Method: fmt.Sprint(i)}}
}

// drained waits for d's delivering goroutine, if one runs, to exit.
func drained(d *Dispatcher) {
	d.mu.Lock()
	running := d.running
	d.mu.Unlock()
	if running != nil {
		<-running
	}
}

// A handler that does not return must not block the session readers that
// deliver notifications: they queue up to the limit, later ones are dropped
// and counted, and the queued ones arrive in order once the handler moves.
func TestSlowHandlerNeverBlocksDelivery(t *testing.T) {
	d := NewDispatcher()
	release := make(chan struct{})
	got := make(chan string, notificationQueue+10)
	d.Add(func(n mcp.JSONRPCNotification) {
		<-release
		got <- n.Method
	})
	// The first is taken by the blocked handler; the next 1024 fill the
	// queue; the last 10 are dropped. None of these calls may block.
	d.Deliver(note(0))
	for i := 0; ; i++ { // until the handler has taken it
		if n, _ := d.Queued(); n == 0 {
			break
		}
		if i == 5000 {
			t.Fatal("the handler never took the first notification")
		}
		time.Sleep(time.Millisecond)
	}
	accepted := 0
	for i := 1; i <= notificationQueue+10; i++ {
		if d.Deliver(note(i)) {
			accepted++
		}
	}
	if accepted != notificationQueue || d.dropped.Load() != 10 {
		t.Fatalf("accepted %d and dropped %d; want %d and 10", accepted, d.dropped.Load(), notificationQueue)
	}
	close(release)
	for i := 0; i <= notificationQueue; i++ {
		if m := <-got; m != fmt.Sprint(i) {
			t.Fatalf("notification %d arrived as %s: out of order", i, m)
		}
	}
	d.Close()
}

// The queue is sized for what waits, not for the worst case: nothing before
// the first notification, a burst's worth while handlers are behind, and a
// few slots again once they have caught up, with no goroutine left.
func TestQueueGrowsWithUseAndShrinksWhenDrained(t *testing.T) {
	d := NewDispatcher()
	defer d.Close()
	release := make(chan struct{})
	var seen []string
	d.Add(func(n mcp.JSONRPCNotification) {
		<-release
		seen = append(seen, n.Method)
	})
	if _, capacity := d.Queued(); capacity != 0 {
		t.Fatalf("a queue of %d before any notification", capacity)
	}
	for i := range 300 {
		d.Deliver(note(i))
	}
	if n, capacity := d.Queued(); n < 299 || capacity != 512 {
		t.Fatalf("%d queued in a queue of %d; want 299 or 300 in 512", n, capacity)
	}
	close(release)
	drained(d)
	if n, capacity := d.Queued(); n != 0 || capacity > notificationQueueIdle {
		t.Fatalf("drained: %d queued in a queue of %d; want none in at most %d", n, capacity, notificationQueueIdle)
	}
	if len(seen) != 300 || seen[0] != "0" || seen[299] != "299" {
		t.Fatalf("handler saw %d notifications (%v … %v), want 0 … 299", len(seen), seen[0], seen[len(seen)-1])
	}
	// And it grows again for the next burst, and keeps the order.
	for i := range 20 {
		d.Deliver(note(300 + i))
	}
	drained(d)
	if len(seen) != 320 || seen[319] != "319" {
		t.Fatalf("second burst: handler saw %d, last %v", len(seen), seen[len(seen)-1])
	}
	if d.dropped.Load() != 0 {
		t.Errorf("%d dropped below the limit", d.dropped.Load())
	}
}

func TestNotificationsWithoutHandlersGoNowhere(t *testing.T) {
	d := NewDispatcher()
	for i := range 2 * notificationQueue {
		if !d.Deliver(note(i)) {
			t.Fatal("dropped a notification nobody listens for, as if handlers were slow")
		}
	}
	if n, capacity := d.Queued(); n != 0 || capacity != 0 || d.dropped.Load() != 0 {
		t.Fatalf("%d queued in a queue of %d, %d dropped; want nothing kept", n, capacity, d.dropped.Load())
	}
	d.Close()
}

func TestDispatcherCloseWithoutHandlers(t *testing.T) {
	d := NewDispatcher()
	d.Deliver(mcp.JSONRPCNotification{})
	d.Close() // must not block though no goroutine was ever started
}

func TestDispatcherCloseDropsTheQueueAndWaitsForTheHandler(t *testing.T) {
	d := NewDispatcher()
	release := make(chan struct{})
	calls := 0
	d.Add(func(mcp.JSONRPCNotification) {
		<-release
		calls++
	})
	for i := range 10 {
		d.Deliver(note(i))
	}
	for i := 0; ; i++ { // until the handler has taken the first
		if n, _ := d.Queued(); n == 9 {
			break
		}
		if i == 5000 {
			t.Fatal("the handler never took the first notification")
		}
		time.Sleep(time.Millisecond)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(release)
	}()
	d.Close()
	if calls != 1 {
		t.Errorf("%d handler calls; want only the one under way when close was called", calls)
	}
	if d.Deliver(note(10)); calls != 1 {
		t.Error("a notification after close reached the handler")
	}
}
