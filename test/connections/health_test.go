package connections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// incrementTimes makes n calls to the non-idempotent tool, each after idling
// with fault applied, and checks that each succeeds and runs exactly once.
func incrementTimes(r *rig.Rig, n int, idle time.Duration, fault func()) {
	r.T.Helper()
	for i := range n {
		fault()
		time.Sleep(idle)
		before := r.Srv.ToolRuns("increment")
		if err := r.Increment(); err != nil {
			r.T.Fatalf("call %d after idling: %v", i, err)
		}
		if ran := r.Srv.ToolRuns("increment") - before; ran != 1 {
			r.T.Fatalf("call %d: increment ran %d times, want 1", i, ran)
		}
	}
}

// F3: something between client and server closes connections idle for
// 30ms with a FIN. The next call after each idle period succeeds.
func TestF3IdleConnectionClosedByTheFarSide(t *testing.T) {
	rig.BothWays(t, func(t *testing.T, listFirst bool) {
		r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true, client.WithKeepAlive(0))
		r.Start()
		if listFirst {
			r.ListTools()
		}
		r.Proxy.SetCloseIdle(30 * time.Millisecond)
		accepted := r.Proxy.Accepted()
		incrementTimes(r, 20, 80*time.Millisecond, func() {})
		if n := r.Proxy.Accepted() - accepted; n < 20 {
			t.Errorf("only %d new connections for 20 calls: the far side did not close the idle ones, so nothing was tested", n)
		}
	})
}

// F4: a NAT or load balancer forgets the connection without telling anyone
// and answers the next packet with RST. With keepalive, the probe meets the
// dead connection instead of the call.
func TestF4SilentlyDroppedConnection(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			rig.BothWays(t, func(t *testing.T, listFirst bool) {
				r := rig.New(t, testserver.Config{Era: era}, true, client.WithKeepAlive(40*time.Millisecond))
				r.Start()
				if listFirst {
					r.ListTools()
				}
				incrementTimes(r, 20, 60*time.Millisecond, r.Proxy.DropAll)
				if s := r.C.Stats(); s.Probes < 20 {
					t.Errorf("%d probes: the calls did not idle past the keepalive interval", s.Probes)
				}
			})
		})
	}
}

// F5: the connection goes half-open: packets vanish, nothing is closed.
func TestF5BlackholedConnection(t *testing.T) {
	t.Run("keepalive replaces the session before a call meets it", func(t *testing.T) {
		// A probe gets 1 s, not the default 50 ms, so that only the
		// blackhole fails one (a loaded machine failed healthy ones too).
		r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true, client.WithKeepAlive(100*time.Millisecond),
			client.WithKeepAliveTimeout(time.Second))
		r.Start()
		r.Proxy.BlackholeAll()
		rig.Eventually(t, "the dead session to be replaced", func() bool {
			s := r.C.Stats()
			return s.Redials == 1 && r.C.State() == client.Ready
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := rig.CallTool(ctx, r.C, "increment", nil); err != nil {
			t.Fatalf("call after detection: %v", err)
		}
		if runs := r.Srv.ToolRuns("increment"); runs != 1 {
			t.Errorf("increment ran %d times, want 1", runs)
		}
		if s := r.C.Stats(); s.ProbeFailures < 1 {
			t.Errorf("stats %+v: no failed probe recorded", s)
		}
	})

	t.Run("one failed probe below the threshold is Degraded, not replaced", func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, true,
			client.WithKeepAlive(100*time.Millisecond), client.WithKeepAliveTimeout(time.Second), client.WithKeepAliveFailureThreshold(2),
			client.WithStateHandler(func(from, to client.State) {
				mu.Lock()
				seen = append(seen, fmt.Sprint(from, ">", to))
				mu.Unlock()
			}))
		r.Start()
		r.Proxy.BlackholeAll()
		// The failed probe's connection is dropped with it, so the next
		// probe goes out on a new connection and succeeds.
		rig.Eventually(t, "Degraded and back", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(seen, "Ready>Degraded") && slices.Contains(seen, "Degraded>Ready")
		})
		if s := r.C.Stats(); s.Redials != 0 || s.ProbeFailures != 1 {
			t.Errorf("stats %+v: want one failed probe and no replacement", s)
		}
		r.MustEcho("after recovery")
	})

	t.Run("without keepalive the call ends at its deadline", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true, client.WithKeepAlive(0))
		r.Start()
		r.Proxy.BlackholeAll()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": "lost"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call on a half-open connection = %v; want the deadline", err)
		}
		t.Logf("caller saw: %v", err)
		r.MustEcho("on a new connection")
	})
}

// F6: the server forgets sessions idle for 300ms (it sweeps every second).
func TestF6ServerSessionIdleTTL(t *testing.T) {
	cfg := testserver.Config{Era: testserver.SessionEra, SessionIdleTTL: 300 * time.Millisecond}
	t.Run("keepalive keeps the session alive", func(t *testing.T) {
		r := rig.New(t, cfg, false, client.WithKeepAlive(100*time.Millisecond))
		r.Start()
		time.Sleep(2200 * time.Millisecond)
		r.MustEcho("still here")
		if s := r.C.Stats(); s.Reinitializations != 0 || s.Probes < 10 {
			t.Errorf("stats %+v: want probes every ~100ms and no re-initialization", s)
		}
	})
	t.Run("without keepalive it expires and is re-initialized", func(t *testing.T) {
		r := rig.New(t, cfg, false, client.WithKeepAlive(0))
		r.Start()
		time.Sleep(2200 * time.Millisecond)
		if err := r.Increment(); err != nil {
			t.Fatal(err)
		}
		if runs := r.Srv.ToolRuns("increment"); runs != 1 {
			t.Errorf("increment ran %d times, want 1", runs)
		}
		if s := r.C.Stats(); s.Reinitializations != 1 {
			t.Errorf("%d re-initializations, want 1", s.Reinitializations)
		}
	})
}

// F8: a server that declines the GET event stream with 405 gets at most one
// GET per session and the client shows no error. A notification handler is
// what makes a session-era session ask for the stream: registered before
// the first session, mcp-go's listener asks for it; after, the client's
// own. Neither asks again, however short the backoff. The stateless era has
// no GET stream at all.
func TestF8DeclinedEventStream(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) { declinedEventStream(t, era, false) })
	}
	t.Run("SessionEra/handler after the first call", func(t *testing.T) { declinedEventStream(t, testserver.SessionEra, true) })
}

func declinedEventStream(t *testing.T, era testserver.Era, late bool) {
	// A probe gets 5 s, not half the interval: under load a 10 ms probe of
	// a healthy session failed, and its redial asked for a second stream.
	r := rig.New(t, testserver.Config{Era: era, DeclineGET: true}, false, client.WithKeepAlive(20*time.Millisecond),
		client.WithKeepAliveTimeout(5*time.Second), client.WithBackOff(rig.FastBackOff))
	if !late {
		r.C.OnNotification(func(mcp.JSONRPCNotification) {})
	}
	r.Start()
	r.MustEcho("one")
	if late && era == testserver.SessionEra {
		// The client's own stream, on the session in service: a loop
		// would ask again every 10 ms.
		r.C.OnNotification(func(mcp.JSONRPCNotification) {})
		rig.Eventually(t, "the event stream asked for", func() bool { return r.Srv.HTTPRequests("GET") >= 1 })
		time.Sleep(100 * time.Millisecond)
		if s, gets := r.C.Stats(), r.Srv.HTTPRequests("GET"); gets != 1 || s.Reinitializations+s.Redials != 0 {
			t.Errorf("%d GETs declined on the first session (stats %+v), want 1", gets, s)
		}
	}
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("two")
	time.Sleep(100 * time.Millisecond)
	r.MustEcho("three")
	s := r.C.Stats()
	sessions := 1 + int64(s.Reinitializations+s.Redials)
	gets := r.Srv.HTTPRequests("GET")
	t.Logf("%d GETs declined for %d sessions", gets, sessions)
	switch {
	case era == testserver.StatelessEra && gets != 0:
		t.Errorf("%d GETs in the stateless era, which has no GET stream", gets)
	case era == testserver.SessionEra && gets < 1:
		t.Error("no GET was sent, so the declined stream was never provoked")
	case gets > sessions:
		t.Errorf("%d GETs for %d sessions", gets, sessions)
	}
}
