package client

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// goBackground (the notifications/cancelled and tasks/cancel the client
// sends on its own) starts nothing once Close has begun, and Close returns
// only after every goroutine it did start has returned: a goroutine that
// runs after Close returned is a leak and a request sent by a closed client.
func TestGoBackgroundStopsAtClose(t *testing.T) {
	for i := range 50 {
		c, err := New("http://127.0.0.1:1/mcp") // New does no I/O
		if err != nil {
			t.Fatal(err)
		}
		var returned, late atomic.Bool // Close returned; something ran after
		var starters sync.WaitGroup
		for range 4 {
			starters.Add(1)
			go func() {
				defer starters.Done()
				for range 100 {
					c.goBackground(func() {
						runtime.Gosched()
						if returned.Load() {
							late.Store(true)
						}
					})
				}
			}()
		}
		runtime.Gosched()
		_ = c.Close()
		returned.Store(true)
		starters.Wait()
		if late.Load() {
			t.Fatalf("client %d: a goroutine goBackground started ran after Close returned", i)
		}
		if c.goBackground(func() {}) {
			t.Fatalf("client %d: goBackground started a goroutine after Close", i)
		}
	}
}
