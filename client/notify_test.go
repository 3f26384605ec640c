package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A handler that does not return must not block the session readers that
// deliver notifications: they queue up to the limit, later ones are dropped
// and counted, and the queued ones arrive in order once the handler moves.
func TestSlowHandlerNeverBlocksDelivery(t *testing.T) {
	d := newDispatcher()
	release := make(chan struct{})
	got := make(chan string, notificationQueue+10)
	d.add(func(n mcp.JSONRPCNotification) {
		<-release
		got <- n.Method
	})
	note := func(i int) mcp.JSONRPCNotification {
		return mcp.JSONRPCNotification{Notification: mcp.Notification{Method: fmt.Sprint(i)}}
	}
	// The first is taken by the blocked handler; the next 1024 fill the
	// queue; the last 10 are dropped. None of these calls may block.
	d.deliver(note(0))
	for i := 0; len(d.queue) != 0; i++ { // until the handler has taken it
		if i == 5000 {
			t.Fatal("the handler never took the first notification")
		}
		time.Sleep(time.Millisecond)
	}
	accepted := 0
	for i := 1; i <= notificationQueue+10; i++ {
		if d.deliver(note(i)) {
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
	d.close()
}

func TestDispatcherCloseWithoutHandlers(t *testing.T) {
	d := newDispatcher()
	d.deliver(mcp.JSONRPCNotification{})
	d.close() // must not block though no goroutine was ever started
}
