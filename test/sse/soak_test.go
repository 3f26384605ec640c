package sse_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/retry"
)

// TestSSESoak: 1000 calls over 200 stream cuts (one every 5 calls, 4
// goroutines calling): no wrong answer, no failed call, and nothing grows:
// goroutines back to where they were, the heap within 10 % of the start
// (after a warm-up of the same mix), and goleak clean at the end
// (TestMain). A call cut as often as WithMaxAttempts allows fails, typed.
func TestSSESoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak: 1000 calls over 200 cuts")
	}
	s, proxy := behindProxy(t, "mcpgo")

	// A cut every 5 calls with 4 in flight has 4 calls in 5 sent again:
	// four times the default retry budget's fifth, which is there to stop
	// storms (test/restarts' budget tests) and would fail calls here by
	// design. The soak is about wrong answers and growth: the budget is
	// sized to the cuts.
	c, err := client.NewSSE(s.url, client.WithKeepAlive(time.Second), client.WithRetryBudget(retry.NewBudget(10*time.Second, 1000, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// settle brings the client to the same state before each measure: every
	// connection cut (the idle ones the HTTP client pools, with their
	// goroutines and buffers, among them), one call on a new session.
	settle := func() {
		proxy.ResetAll()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := s.echo("settle")
		if _, err := c.CallTool(ctx, req); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}

	// run makes calls with cuts, one cut every 5 completed calls.
	run := func(calls, cuts int, tag string) (wrong, failed int64) {
		var done atomic.Int64
		var wrongN, failedN atomic.Int64
		var wg sync.WaitGroup
		next := make(chan int, calls)
		for i := range calls {
			next <- i
		}
		close(next)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					req, want := s.echo(fmt.Sprintf("%s-%d", tag, i))
					res, err := c.CallTool(ctx, req)
					cancel()
					switch {
					case err != nil && !typed(err):
						t.Errorf("call %s-%d failed untyped: %v", tag, i, err)
					case err != nil:
						// A call cut as many times as WithMaxAttempts
						// allows: typed, and no wrong answer.
						failedN.Add(1)
					case text(res) != want:
						wrongN.Add(1)
						t.Errorf("call %s-%d answered %q", tag, i, text(res))
					}
					done.Add(1)
				}
			}()
		}
		cutDone := make(chan struct{})
		go func() {
			defer close(cutDone)
			for k := 1; k <= cuts; k++ {
				for done.Load() < int64(k*calls/cuts) {
					time.Sleep(time.Millisecond)
				}
				if k*calls/cuts >= calls {
					return
				}
				proxy.ResetAll()
			}
		}()
		wg.Wait()
		<-cutDone
		return wrongN.Load(), failedN.Load()
	}

	// The warm-up is the same mix: what it leaves (the HTTP client's
	// connections, the tools' annotations, the allocator's spans) is the
	// baseline; what the soak adds to it is growth.
	run(1000, 200, "warm")
	settle()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	redials0 := c.Stats().Redials

	wrong, failed := run(1000, 200, "soak")

	settle()
	// A leak stays; what the last cuts left in flight (a connection being
	// torn down, a read buffer) goes within moments: the heap is read
	// again, up to 10 times 100 ms apart, until it is back within the
	// bound (a loaded CI machine read +11.5 % once, at the first read).
	var after runtime.MemStats
	for i := 0; ; i++ {
		runtime.GC()
		runtime.ReadMemStats(&after)
		if i == 9 || float64(after.HeapAlloc) <= 1.1*float64(before.HeapAlloc) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	g1 := runtime.NumGoroutine()
	redials := c.Stats().Redials - redials0
	t.Logf("1000 calls, %d new sessions: %d wrong, %d failed (typed); heap %d → %d B (%+.1f %%); goroutines %d → %d",
		redials, wrong, failed, before.HeapAlloc, after.HeapAlloc, 100*(float64(after.HeapAlloc)/float64(before.HeapAlloc)-1), g0, g1)
	if redials < 150 {
		t.Errorf("%d new sessions over 200 cuts: the cuts did not take", redials)
	}
	if float64(after.HeapAlloc) > 1.1*float64(before.HeapAlloc) {
		t.Errorf("the heap grew from %d to %d B, over 10 %%", before.HeapAlloc, after.HeapAlloc)
	}
	for deadline := time.Now().Add(2 * time.Second); g1 > g0 && time.Now().Before(deadline); g1 = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	if g1 > g0+2 {
		t.Errorf("goroutines grew from %d to %d", g0, g1)
	}
}
