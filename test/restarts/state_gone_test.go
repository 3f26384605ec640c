package restarts

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// State() is not Ready while the client knows its session is gone (api.md,
// "One policy for every request the client makes"): the server restarted
// and forgot the session, the client learned it (a call's 404 or 400, the
// event stream's, a keepalive probe's), and the new session cannot open yet
// because the server declines initialize (503, Retry-After: 1). Ready
// again once it opens.
func TestStateIsNotReadyWhileTheSessionIsKnownExpired(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  testserver.Config
		opts []client.Option
		// before runs before the restart; the function it returns runs
		// after it, and returns what to check once the new session opened.
		before func(r *rig.Rig) (after func() (check func()))
	}{
		{name: "a call meets 404", cfg: testserver.Config{Era: testserver.SessionEra}, before: aCall},
		{name: "a call meets 400", cfg: testserver.Config{Era: testserver.SessionEra, ExpiredSession400: true}, before: aCall},
		{name: "the event stream meets 404", cfg: testserver.Config{Era: testserver.SessionEra}, before: anEventStream},
		{name: "the event stream meets 400", cfg: testserver.Config{Era: testserver.SessionEra, ExpiredSession400: true}, before: anEventStream},
		{name: "an event stream opened after the restart meets 404", cfg: testserver.Config{Era: testserver.SessionEra}, before: aLateEventStream},
		{name: "an event stream opened after the restart meets 400", cfg: testserver.Config{Era: testserver.SessionEra, ExpiredSession400: true}, before: aLateEventStream},
		{
			name: "a keepalive probe meets 404", cfg: testserver.Config{Era: testserver.SessionEra},
			opts:   []client.Option{client.WithKeepAlive(100 * time.Millisecond)},
			before: func(*rig.Rig) func() func() { return func() func() { return func() {} } },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]client.Option{client.WithKeepAlive(0)}, tc.opts...)
			r := rig.New(t, tc.cfg, false, opts...)
			r.Start()
			r.MustEcho("before the restart")
			after := tc.before(r)

			initializes := r.Srv.RPCs("initialize")
			r.Srv.FailPOSTs(1<<30, 503, "1", false, "initialize")
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			check := after()
			// The client knows the session is gone once it asks for a new
			// one; the server asks it to wait a second before the next. A
			// client that never asks is told by what follows.
			if !rig.Within(2*time.Second, func() bool { return r.Srv.RPCs("initialize") > initializes }) {
				t.Errorf("the client did not ask for a new session within 2s of the restart")
			}
			var seen []client.State
			for range 40 {
				if st := r.C.State(); len(seen) == 0 || seen[len(seen)-1] != st {
					seen = append(seen, st)
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("State() while the new session could not open: %v; stats %+v", seen, r.C.Stats())
			for _, st := range seen {
				if st == client.Ready {
					t.Errorf("State() went through %v while the server declined every initialize: Ready while the session was known gone", seen)
					break
				}
			}

			r.Srv.FailPOSTs(0, 0, "", false)
			rig.Eventually(t, "Ready once the new session opens", func() bool { return r.C.State() == client.Ready })
			check()
			r.MustEcho("after the restart")
			if s := r.C.Stats(); s.Reinitializations != 1 {
				t.Errorf("stats %+v: want one re-initialization", s)
			}
		})
	}
}

// aCall has a call meet the restarted server: it waits for the new session
// and succeeds.
func aCall(r *rig.Rig) func() func() {
	return func() func() {
		errs := make(chan error, 1)
		go func() {
			_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "across the restart"})
			errs <- err
		}()
		return func() {
			if err := <-errs; err != nil {
				r.T.Errorf("call across the restart: %v", err)
			}
		}
	}
}

// anEventStream opens the session's event stream and waits until it
// carries notifications: its 404 or 400 after the restart is how the client
// learns, with no call made. Once the new session opens, the stream carries
// them again.
func anEventStream(r *rig.Rig) func() func() {
	got := notifications(r.C)
	if err := r.C.Subscribe(r.Ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: testserver.CounterURI}}); err != nil {
		r.T.Fatal(err)
	}
	awaitUpdate(r.T, r.Srv, got)
	return func() func() {
		return func() { awaitUpdate(r.T, r.Srv, got) }
	}
}

// aLateEventStream registers the first notification handler after the
// restart, which opens the session's event stream then (F32): the server
// refuses it from the start, as it would a server that does not offer the
// stream, and only asking the session tells the two apart.
func aLateEventStream(r *rig.Rig) func() func() {
	return func() func() {
		got := notifications(r.C)
		return func() {
			if err := r.C.Subscribe(r.Ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: testserver.CounterURI}}); err != nil {
				r.T.Fatal(err)
			}
			awaitUpdate(r.T, r.Srv, got)
		}
	}
}
