package restarts

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// The session's identity and what it declared are the current session's,
// before and after a re-initialization: the session id changes with it.
func TestSessionIdentityAcrossRestart(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false)
			if r.C.IsInitialized() || r.C.GetSessionId() != "" {
				t.Fatalf("before the first call: IsInitialized %v, session %q", r.C.IsInitialized(), r.C.GetSessionId())
			}
			r.Start()
			if !r.C.IsInitialized() {
				t.Fatal("IsInitialized = false after Initialize")
			}
			before := r.C.GetSessionId()
			if (before != "") != (era == testserver.SessionEra) {
				t.Fatalf("session id %q in %v", before, era)
			}
			server, clientCaps := r.C.GetServerCapabilities(), r.C.GetClientCapabilities()
			if server.Tools == nil || server.Resources == nil || server.Prompts == nil {
				t.Fatalf("server capabilities %+v: want tools, resources and prompts", server)
			}

			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			r.MustEcho("after")
			after := r.C.GetSessionId()
			if era == testserver.SessionEra && (after == "" || after == before) {
				t.Errorf("session id %q after a re-initialization, was %q: want a new one", after, before)
			}
			if era == testserver.StatelessEra && after != "" {
				t.Errorf("session id %q in the stateless era", after)
			}
			if !r.C.IsInitialized() {
				t.Error("IsInitialized = false after a re-initialization")
			}
			if got := r.C.GetServerCapabilities(); got.Tools == nil || got.Prompts == nil {
				t.Errorf("server capabilities after restart %+v", got)
			}
			if got := r.C.GetClientCapabilities(); !sameJSON(got, clientCaps) {
				t.Errorf("client capabilities changed across the restart: %+v, was %+v", got, clientCaps)
			}
			r.C.Close()
			if r.C.IsInitialized() {
				t.Error("IsInitialized = true after Close")
			}
		})
	}
}

// OnConnectionLost is told of each lost session once, with the cause,
// after the client left Ready and before it is back: in order with the
// state handler, on the same goroutine.
func TestOnConnectionLostOncePerLostSession(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			record := func(e string) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
			r := rig.New(t, testserver.Config{Era: era}, false,
				client.WithStateHandler(func(from, to client.State) { record(from.String() + ">" + to.String()) }))
			var causes []error
			r.C.OnConnectionLost(func(err error) {
				mu.Lock()
				causes = append(causes, err)
				mu.Unlock()
				record("lost")
			})
			r.Start()
			for round := 1; round <= 2; round++ {
				// The server is down for a while: calls fail to reach it,
				// and the session is lost, then found again (stateless)
				// or replaced (session era) once it is back.
				r.Srv.Stop()
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": "down"})
				cancel()
				if !errors.Is(err, client.ErrUnavailable) {
					t.Fatalf("round %d: call while down = %v, want ErrUnavailable", round, err)
				}
				if err := r.Srv.Start(); err != nil {
					t.Fatal(err)
				}
				r.MustEcho("back")
				rig.Eventually(t, "the state handler to hear of Ready", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(events) > 0 && events[len(events)-1] == "Reconnecting>Ready"
				})
				mu.Lock()
				n, last := len(causes), causes[len(causes)-1]
				mu.Unlock()
				if n != round {
					t.Fatalf("round %d: OnConnectionLost called %d times in all, want %d (events %v)", round, n, round, events)
				}
				if last == nil {
					t.Errorf("round %d: OnConnectionLost got no cause", round)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			// Every loss sits between the transition that left Ready and
			// the one back to it.
			for i, e := range events {
				if e == "lost" && (i == 0 || i == len(events)-1 ||
					events[i-1] != "Ready>Reconnecting" && events[i-1] != "Degraded>Reconnecting" || events[i+1] != "Reconnecting>Ready") {
					t.Errorf("loss out of order in %v", events)
				}
			}
		})
	}
}

// Discover and RootListChanges go through the call path: after a restart
// they simply work.
func TestDiscoverAndRootsAcrossRestart(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			roots := mcpclient.WithRootsHandler(rootsHandler{})
			r := rig.New(t, testserver.Config{Era: era}, false, client.WithClientOptions(roots))
			r.Start()
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			res, err := r.C.Discover(r.Ctx(), mcp.DiscoverRequest{})
			switch era {
			case testserver.StatelessEra:
				if err != nil || !slices.Contains(res.SupportedVersions, mcp.ProtocolVersion20260728) {
					t.Errorf("Discover after a restart = %+v, %v", res, err)
				}
			case testserver.SessionEra:
				if err == nil || errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown) {
					t.Errorf("Discover of a session-era server = %v, want its own error", err)
				}
			}
			if err := r.C.RootListChanges(r.Ctx()); err != nil {
				t.Errorf("RootListChanges after a restart: %v", err)
			}
			if era == testserver.SessionEra {
				rig.Eventually(t, "the server to hear the roots changed", func() bool {
					return r.Srv.RPCs(mcp.MethodNotificationRootsListChanged) >= 1
				})
			}
		})
	}
}

type rootsHandler struct{}

func (rootsHandler) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///tmp", Name: "tmp"}}}, nil
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
