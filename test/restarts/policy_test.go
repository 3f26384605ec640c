package restarts

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F26: a server that answers an unknown session with 400 and a JSON-RPC
// error, as the TypeScript SDK's do. After a restart, 16 goroutines calling
// a non-idempotent tool all succeed through one re-initialization, and each
// call runs once: a 4xx means it did not run.
func TestF26ExpiredSessionAnswered400(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra, ExpiredSession400: true}, false)
	r.Start()
	r.MustEcho("before")
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	const callers = 16
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range callers {
		wg.Go(func() {
			if err := r.Increment(); err != nil {
				failed.Add(1)
				t.Errorf("increment after the restart: %v", err)
			}
		})
	}
	wg.Wait()
	if runs := r.Srv.ToolRuns("increment"); runs != callers-int64(failed.Load()) {
		t.Errorf("increment ran %d times for %d successful calls", runs, callers-failed.Load())
	}
	if s := r.C.Stats(); s.Reinitializations != 1 {
		t.Errorf("stats %+v: want 1 re-initialization for all goroutines", s)
	}
	if n := r.Srv.RPCs("initialize"); n != 2 {
		t.Errorf("server saw %d initialize requests, want 2", n)
	}
}

// F28: a call's answer stream is cut halfway (a proxy resets every
// connection). The server keeps its events: the client resumes the stream
// with Last-Event-ID on the same session and the answer arrives, the tool
// having run once, even though it is not safe to repeat.
func TestF28CutStreamIsResumedWhereTheServerKeepsEvents(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra, EventStore: true}, true)
	cutAfter(r, 3)
	r.Start()
	got, err := rig.CallTool(r.Ctx(), r.C, "progress", map[string]any{"n": 8, "ms": 40})
	if err != nil || got != "done" {
		t.Fatalf("progress = %q, %v; want the answer through the resumed stream", got, err)
	}
	if runs := r.Srv.ToolRuns("progress"); runs != 1 {
		t.Errorf("progress ran %d times, want 1: the answer was resumed, not the call sent again", runs)
	}
	if n := r.Srv.HTTPRequests("GET"); n < 1 {
		t.Errorf("server saw %d GETs; want the resumption", n)
	}
	if n := r.C.Stats().Reinitializations + r.C.Stats().Redials; n != 0 {
		t.Errorf("%d new sessions; the stream is resumed on the same one", n)
	}
}

// F28 where the server keeps no events: the answer is lost. A read-only
// call is sent again and succeeds; one that is not safe to repeat fails
// with ErrOutcomeUnknown saying the stream was cut, having run once.
func TestF28CutStreamWithoutEventsIsALostAnswer(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, true)
	cut := cutAfter(r, 3)
	r.Start()
	got, err := rig.CallTool(r.Ctx(), r.C, "progressRead", map[string]any{"n": 8, "ms": 40})
	if err != nil || got != "done" {
		t.Fatalf("progressRead = %q, %v; want the replay's answer", got, err)
	}
	if runs := r.Srv.ToolRuns("progressRead"); runs != 2 {
		t.Errorf("progressRead ran %d times, want 2: the cut one and the replay", runs)
	}

	cut.Store(0)
	_, err = rig.CallTool(r.Ctx(), r.C, "progress", map[string]any{"n": 8, "ms": 40})
	if !errors.Is(err, client.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "cut") {
		t.Fatalf("progress = %v; want ErrOutcomeUnknown saying the stream was cut", err)
	}
	if runs := r.Srv.ToolRuns("progress"); runs != 1 {
		t.Errorf("progress ran %d times, want 1", runs)
	}
}

// F27: the server restarts while the client idles, holding only its event
// stream. The stream's next GET meets 404 (mcp-go) or 400 (the TypeScript
// SDK's servers): the client re-initializes in the background, restores the
// subscription and reopens the stream, and the next update arrives with no
// call made.
func TestF27EventStreamRefusedReinitializesInTheBackground(t *testing.T) {
	for name, cfg := range map[string]testserver.Config{
		"404": {Era: testserver.SessionEra},
		"400": {Era: testserver.SessionEra, ExpiredSession400: true},
	} {
		t.Run(name, func(t *testing.T) {
			r := rig.New(t, cfg, false, client.WithKeepAlive(0)) // no probes: only the stream can tell
			got := notifications(r.C)
			r.Start()
			if err := r.C.Subscribe(r.Ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: testserver.CounterURI}}); err != nil {
				t.Fatal(err)
			}
			awaitUpdate(t, r.Srv, got)
			calls := r.C.Stats().Calls
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			awaitUpdate(t, r.Srv, got)
			// The restored subscription's updates may arrive before the
			// dial that restored it has counted the re-initialization
			// (restore comes first, then the books): wait for the count.
			rig.Eventually(t, "the re-initialization counted", func() bool { return r.C.Stats().Reinitializations >= 1 })
			if s := r.C.Stats(); s.Calls != calls || s.Reinitializations != 1 {
				t.Errorf("stats %+v: want 1 re-initialization and no call made after the restart", s)
			}
			if n := r.Srv.RPCs("resources/subscribe"); n != 2 {
				t.Errorf("server saw %d resources/subscribe, want the caller's and the restored one", n)
			}
		})
	}
}

// F32: notifications are wanted only after the session opened: a
// subscription made before any handler, or a handler registered after the
// first call. The stream opens on the session in service, and on the one
// after a restart.
func TestF32LateHandlerOrSubscriptionOpensTheStream(t *testing.T) {
	subscribe := func(r *rig.Rig) {
		if err := r.C.Subscribe(r.Ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: testserver.CounterURI}}); err != nil {
			r.T.Fatal(err)
		}
	}
	for name, late := range map[string]func(r *rig.Rig) <-chan mcp.JSONRPCNotification{
		"subscription before any handler": func(r *rig.Rig) <-chan mcp.JSONRPCNotification { subscribe(r); return notifications(r.C) },
		"handler after the first call":    func(r *rig.Rig) <-chan mcp.JSONRPCNotification { got := notifications(r.C); subscribe(r); return got },
	} {
		t.Run(name, func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: testserver.SessionEra, ExpiredSession400: true}, false, client.WithKeepAlive(0))
			r.Start()
			r.MustEcho("first")
			got := late(r)
			awaitUpdate(t, r.Srv, got)
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			awaitUpdate(t, r.Srv, got)
			if s := r.C.Stats(); s.Reinitializations != 1 {
				t.Errorf("stats %+v: want the one re-initialization the refused stream caused", s)
			}
		})
	}
}

// cutAfter has the rig's proxy reset every connection once the client has
// heard n progress notifications of a call, once per call (store 0 in the
// returned counter to arm it again).
func cutAfter(r *rig.Rig, n int64) *atomic.Int64 {
	var heard atomic.Int64
	r.C.OnNotification(func(note mcp.JSONRPCNotification) {
		if note.Method == "notifications/progress" && heard.Add(1) == n {
			r.Proxy.ResetAll()
		}
	})
	return &heard
}
