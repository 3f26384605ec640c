package client

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
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

// An outage told after Close (a session lost as the pool closes it: a
// stdio server that exits on stdin's end, a probe that fails as its
// session closes) starts none: no breaker timer outlives Close to open it,
// log and tell the observers then.
func TestNoOutageAfterClose(t *testing.T) {
	c, err := New("http://127.0.0.1:1/mcp") // New does no I/O; the breaker is on by default
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	c.sess.noteOutcome(policy.Verdict{Class: policy.OutcomeUnknown}) // an outage, no session in service
	if since := c.sess.brk.Load().OutageSince(); !since.IsZero() {
		t.Fatalf("an outage began after Close (since %v): its timer opens the breaker after Close", since)
	}
}
