package connections

import (
	"context"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// idleRig is a client on its own HTTP client (so that what it keeps is its
// own decision), reaching the server through a proxy that counts the
// connections open and ever accepted.
func idleRig(t *testing.T, era testserver.Era, opts ...client.Option) (*client.ResilientClient, *faultproxy.Proxy, *testserver.Server) {
	t.Helper()
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	proxy, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	c, err := client.New(proxy.URL("/mcp"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, proxy, srv
}

// An idle client keeps no connection: once a keepalive probe finds no call
// in flight, the client's connections are closed (and with them their two
// goroutines each), and its next call dials a new one and succeeds. With
// WithKeepIdleConnection(true) the probes' connection stays open, and the
// next call is sent on it.
func TestIdleClientKeepsNoConnection(t *testing.T) {
	for _, era := range rig.BothEras {
		for _, keep := range []bool{false, true} {
			name := era.String() + "/dropped"
			if keep {
				name = era.String() + "/kept"
			}
			t.Run(name, func(t *testing.T) {
				// Probes 100 ms apart: a probe that falls due while the
				// call after idle is in flight goes out beside it, on a
				// connection of its own (checked below); at 20 ms, a loaded
				// machine met one often.
				const interval = 100 * time.Millisecond
				// A probe's timeout well beyond the interval: the test is
				// about the connections probes leave behind, and on a loaded
				// machine the default (interval/2) fails probes by time.
				c, proxy, srv := idleRig(t, era, client.WithKeepAlive(interval), client.WithKeepAliveTimeout(5*time.Second), client.WithKeepIdleConnection(keep))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if _, err := c.Initialize(ctx, rig.BenchInit()); err != nil {
					t.Fatal(err)
				}
				if _, err := rig.CallTool(ctx, c, "echo", map[string]any{"text": "x"}); err != nil {
					t.Fatal(err)
				}
				probes := c.Stats().Probes
				rig.Eventually(t, "three keepalive probes", func() bool { return c.Stats().Probes >= probes+3 })
				if keep {
					// The probes' connection is kept open between them (and
					// any other the handshake opened, until IdleConnTimeout).
					if open := proxy.Open(); open < 1 {
						t.Fatalf("no connection open after the probes, want the one kept")
					}
				} else {
					rig.Eventually(t, "no connection left open", func() bool { return proxy.Open() == 0 })
				}
				if f := c.Stats().ProbeFailures; f != 0 {
					t.Fatalf("%d probes failed", f)
				}

				accepted := proxy.Accepted()
				calls := srv.RPCs("tools/call")
				probesBefore := c.Stats().Probes
				got, err := rig.CallTool(ctx, c, "echo", map[string]any{"text": "after idle"})
				if err != nil {
					t.Fatalf("the first call after idle: %v", err)
				}
				if got != "after idle" {
					t.Fatalf("the first call after idle answered %q", got)
				}
				if n := srv.RPCs("tools/call") - calls; n != 1 {
					t.Fatalf("the server ran %d calls, want 1", n)
				}
				// A keepalive probe during the call needs a connection
				// of its own, the call holding the one there is.
				beside := int64(c.Stats().Probes - probesBefore)
				dialed := proxy.Accepted() - accepted
				want := int64(1)
				if keep {
					want = 0
				}
				if dialed < want || dialed > want+beside {
					t.Errorf("the first call after idle dialled %d connections (keep=%v, %d probes beside it)", dialed, keep, beside)
				}
			})
		}
	}
}

// A probe that finds a call in flight leaves the connections alone: the
// client is not idle. Here a long call holds one session of two while both
// are probed every few milliseconds; its answer is a stream of progress
// notifications, so its request was handed over long before it ends.
func TestProbeDuringACallKeepsTheConnections(t *testing.T) {
	const interval = 10 * time.Millisecond
	// The probes' timeout is well beyond the interval, as above: a probe
	// failed by time on a loaded machine would take the call's session
	// with it, which is not what this test is about.
	c, proxy, _ := idleRig(t, testserver.SessionEra, client.WithKeepAlive(interval), client.WithKeepAliveTimeout(5*time.Second), client.WithPoolSize(2))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, rig.BenchInit()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	accepted := proxy.Accepted()
	probes := c.Stats().Probes
	go func() {
		_, err := rig.CallTool(ctx, c, "progressRead", map[string]any{"n": 40, "ms": 10})
		done <- err
	}()
	rig.Eventually(t, "probes during the call", func() bool { return c.Stats().Probes >= probes+10 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Closing the idle connections after each probe would dial one for
	// about every probe. Left alone, the sessions share two or three (the
	// call, and probes of both sessions at once): 1 to 6 in 70 probes
	// measured with the default (short) probe timeout, fewer with this one.
	n := c.Stats().Probes - probes
	if dialed := proxy.Accepted() - accepted; dialed*5 > int64(n) {
		t.Errorf("%d connections dialled during %d probes while a call was in flight: the probes closed the idle ones", dialed, n)
	}
}
