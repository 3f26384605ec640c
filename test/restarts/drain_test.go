package restarts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/gateway"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F40: a gateway in front of a stdio server answers -32603 to every
// request for 2 s while its child restarts. Eight goroutines of read-only
// calls across that window all succeed: the -32603 is a server that does
// not serve now, and each call is resent on the backoff's schedule, not
// spent in a burst of WithMaxAttempts. An unannotated call in the window
// ends ErrOutcomeUnknown with the server's error in its chain, run at most
// once.
func TestF40GatewayDrainIsWaitedOut(t *testing.T) {
	const (
		drain   = 2 * time.Second
		callers = 8
		// The longest pause of the default backoff (100 ms × 1.6ⁿ, ±20%)
		// that can span the end of a 2 s drain is its sixth, 1.05 s + 20%:
		// a call that began with the drain is sent again within it. A
		// call that waited a step more, or for a reconnect, would need at
		// least 1.3 s more; the bound leaves 0.7 s of that to a loaded
		// machine's scheduling.
		step = 2 * time.Second
		// Sends of one call the gateway can refuse: the default
		// schedule's pauses that fit in 2 s, at their shortest, are six.
		refusedPerCall = 7
	)
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			rig.BothWays(t, func(t *testing.T, listFirst bool) {
				srv, gw, c := behindGateway(t, era)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
					t.Fatal(err)
				}
				if listFirst {
					// The client knows echo is read-only before the drain:
					// the calls' own resends wait it out, not a listing.
					if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
						t.Fatal(err)
					}
				}

				type outcome struct {
					calls, metDrain int
					longest         time.Duration
					errs            []error
				}
				outcomes := make([]outcome, callers)
				var begun atomic.Bool // the child restarts from now on
				var wg sync.WaitGroup
				for g := range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						o := &outcomes[g]
						// Until a call that began after the drain ended; a
						// loop bounded in count, and in time by ctx.
						for i := range 1000 {
							during := begun.Load()
							text := fmt.Sprintf("caller %d call %d", g, i)
							started := time.Now()
							got, err := rig.CallTool(ctx, c, "echo", map[string]any{"text": text})
							took := time.Since(started)
							o.calls++
							o.longest = max(o.longest, took)
							if err == nil && got != text {
								err = fmt.Errorf("echo answered %q", got)
							}
							if err != nil {
								o.errs = append(o.errs, err)
							}
							if during {
								o.metDrain++
							}
							if during && !gw.Restarting() {
								return
							}
							if ctx.Err() != nil {
								return
							}
						}
					}()
				}
				time.Sleep(20 * time.Millisecond) // the callers are at work
				gw.ChildRestarts(drain)
				begun.Store(true)

				ran := srv.ToolRuns("increment")
				// Sent in the window: one sent after it would succeed. Its
				// error may come after the window: to know increment is not
				// safe to repeat, the client lists the tools, a safe call
				// that waits the drain out too.
				_, err := rig.CallTool(ctx, c, "increment", nil)
				wg.Wait()

				if !errors.Is(err, client.ErrOutcomeUnknown) {
					t.Errorf("increment answered -32603: %v; want ErrOutcomeUnknown", err)
				}
				if !errors.Is(err, mcp.ErrInternalError) {
					t.Errorf("increment's error does not keep the server's JSON-RPC error: %v", err)
				}
				if n := srv.ToolRuns("increment") - ran; n > 1 {
					t.Errorf("increment ran %d times, want at most 1", n)
				}

				var calls, errs int
				var longest time.Duration
				for g, o := range outcomes {
					calls += o.calls
					longest = max(longest, o.longest)
					errs += len(o.errs)
					if len(o.errs) > 0 {
						t.Errorf("caller %d: %d of %d calls failed, the first: %v", g, len(o.errs), o.calls, o.errs[0])
					}
					if o.metDrain == 0 {
						t.Errorf("caller %d made no call in the drain", g)
					}
					if o.longest > drain+step {
						t.Errorf("caller %d: a call took %v, more than the drain and one backoff step (%v)", g, o.longest, drain+step)
					}
				}
				refused := gw.Refused("")
				t.Logf("%d calls, %d failed, the longest took %v; the gateway refused %d requests", calls, errs, longest, refused)
				if refused < callers {
					t.Errorf("the gateway refused %d requests: the callers did not meet the drain", refused)
				}
				// Not a burst: each call was refused at most once per step of
				// the backoff; a few more for the client's own probes.
				if limit := int64(callers*refusedPerCall + callers); refused > limit {
					t.Errorf("the gateway refused %d requests, more than %d: calls were resent in bursts", refused, limit)
				}
			})
		})
	}
}

// F40 with the sessions lost too: the server behind the gateway restarts
// as the child does, and the event stream of a client that listens (open:
// a notification came through it) finds its session gone inside the drain.
// The new session's initialize meets -32603 as well: the dial is tried
// again on the backoff schedule, as after a 503, not given up as the
// server's answer, and a call made meanwhile succeeds once the child is
// back, on one re-initialization.
func TestF40GatewayDrainLosesTheSessions(t *testing.T) {
	srv, gw, c := behindGateway(t, testserver.SessionEra)
	got := notifications(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	// The event stream is open when a notification comes through it: a
	// stream cut before it opened is one the server may not offer.
	if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: testserver.CounterURI}}); err != nil {
		t.Fatal(err)
	}
	awaitUpdate(t, srv, got)

	gw.ChildRestarts(2 * time.Second)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, "a re-initialization in the drain", func() bool { return gw.Refused("initialize") > 0 })
	if !gw.Restarting() {
		t.Fatal("the re-initialization did not meet the drain")
	}
	if got, err := rig.CallTool(ctx, c, "echo", map[string]any{"text": "after"}); err != nil || got != "after" {
		t.Fatalf("echo in the drain = %q, %v; want it answered once the child is back", got, err)
	}
	if s := c.Stats(); s.Reinitializations != 1 {
		t.Errorf("%d re-initializations, want 1", s.Reinitializations)
	}
}

// behindGateway is our test server in era behind a draining gateway, and a
// client of the gateway, all closed with the test.
func behindGateway(t *testing.T, era testserver.Era) (*testserver.Server, *gateway.Gateway, *client.ResilientClient) {
	t.Helper()
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	gw, err := gateway.Start(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	c, err := client.New(gw.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, gw, c
}
