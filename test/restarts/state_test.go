package restarts

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// notifications collects what the client's handlers receive.
func notifications(c *client.ResilientClient) <-chan mcp.JSONRPCNotification {
	got := make(chan mcp.JSONRPCNotification, 256)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case got <- n:
		default:
		}
	})
	return got
}

// awaitUpdate asks the server to update the resource until the client's
// handler hears of it: subscriptions are set up asynchronously (an event
// stream or a listen stream opens after the call that asked for it).
func awaitUpdate(t *testing.T, srv *testserver.Server, got <-chan mcp.JSONRPCNotification) {
	t.Helper()
	for range 200 {
		srv.UpdateResource(testserver.CounterURI)
		deadline := time.After(25 * time.Millisecond)
		for waiting := true; waiting; {
			select {
			case n := <-got:
				if n.Method == string(mcp.MethodNotificationResourceUpdated) && n.Params.AdditionalFields["uri"] == testserver.CounterURI {
					return
				}
			case <-deadline:
				waiting = false
			}
		}
	}
	t.Fatal("no notifications/resources/updated reached the handler")
}

// F15: a subscription survives the server forgetting the session: the
// update after the restart still reaches the caller's handler, without the
// caller doing anything. The logging level is restored the same way.
func TestF15SubscriptionsAndLevelSurviveRestart(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			// A probe gets 5 s: a healthy session's probe failed by time
			// under load would add a redial, and a third subscribe.
			r := rig.New(t, testserver.Config{Era: era}, false, client.WithKeepAlive(50*time.Millisecond), client.WithKeepAliveTimeout(5*time.Second))
			got := notifications(r.C)
			r.Start()
			if err := r.C.Subscribe(r.Ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: testserver.CounterURI}}); err != nil {
				t.Fatal(err)
			}
			if err := r.C.SetLevel(r.Ctx(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
				t.Fatal(err)
			}
			awaitUpdate(t, r.Srv, got)

			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			if era == testserver.SessionEra {
				rig.Eventually(t, "the re-initialization", func() bool { return r.C.Stats().Reinitializations == 1 })
			}
			awaitUpdate(t, r.Srv, got)

			if era == testserver.SessionEra {
				if n := r.Srv.RPCs("resources/subscribe"); n != 2 {
					t.Errorf("server saw %d resources/subscribe, want 2: the caller's and the restored one", n)
				}
				if n := r.Srv.RPCs("logging/setLevel"); n != 2 {
					t.Errorf("server saw %d logging/setLevel, want 2: the caller's and the restored one", n)
				}
				// Without traffic, notifications reach an idle client only
				// on the GET event stream: one per session.
				if n := r.Srv.HTTPRequests("GET"); n < 2 {
					t.Errorf("server saw %d GET event streams for 2 sessions", n)
				}
			}
		})
	}
}

// F14: the server comes back with other tools. The handlers hear
// notifications/tools/list_changed, and replay follows the new annotations:
// increment, now read-only, is replayed; add, no longer idempotent, is not.
//
// A caller that never listed tools gets the same replay decisions; it hears
// no list_changed, as the client had nothing to compare the new tools with.
func TestF14ToolsChangedAcrossRestart(t *testing.T) {
	rig.BothWays(t, toolsChangedAcrossRestart)
}

func toolsChangedAcrossRestart(t *testing.T, listFirst bool) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
	got := notifications(r.C)
	r.Start()
	if listFirst {
		r.ListTools()
	}
	r.Srv.Reconfigure(testserver.Config{Era: testserver.SessionEra, Tools: testserver.ToolsChanged})
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("after the restart") // re-initializes, and lists the tools again if they were listed
	if listFirst {
		rig.Eventually(t, "notifications/tools/list_changed", func() bool {
			select {
			case n := <-got:
				return n.Method == mcp.MethodNotificationToolsListChanged
			default:
				return false
			}
		})
	}

	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	if err := r.Increment(); err != nil {
		t.Fatalf("increment, now read-only, after a lost answer: %v", err)
	}
	if runs := r.Srv.ToolRuns("increment"); runs != 2 {
		t.Errorf("increment ran %d times, want 2 (the lost answer and the replay)", runs)
	}

	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	_, err := rig.CallTool(r.Ctx(), r.C, "add", map[string]any{"a": 1, "b": 2})
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("add, no longer idempotent, after a lost answer = %v; want ErrOutcomeUnknown", err)
	}
	if runs := r.Srv.ToolRuns("add"); runs != 1 {
		t.Errorf("add ran %d times, want 1", runs)
	}
	if s := r.C.Stats(); s.Reinitializations != 1 {
		t.Errorf("%d re-initializations, want 1", s.Reinitializations)
	}
}

// The same restart with the same tools announces nothing.
func TestUnchangedToolsAreNotAnnounced(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
	got := notifications(r.C)
	r.Start()
	r.ListTools()
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("after the restart")
	time.Sleep(50 * time.Millisecond)
	select {
	case n := <-got:
		if n.Method == mcp.MethodNotificationToolsListChanged {
			t.Fatal("tools/list_changed announced though nothing changed")
		}
	default:
	}
	if n := r.Srv.RPCs("tools/list"); n != 2 {
		t.Errorf("server saw %d tools/list, want 2: the caller's and the one after re-initializing", n)
	}
}

// echoModel is a sampling handler that answers with the prompt, upper-cased,
// and counts the requests it served.
type echoModel struct{ served atomic.Int64 }

func (m *echoModel) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	m.served.Add(1)
	text := ""
	if len(req.Messages) > 0 {
		if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
			text = strings.ToUpper(tc.Text)
		}
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(text)},
		Model:           "echo-model",
	}, nil
}

// A sampling handler given through WithClientOptions serves the server's
// requests on every session: after a re-initialization too.
func TestSamplingHandlerServesAfterReinitialization(t *testing.T) {
	model := &echoModel{}
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false,
		client.WithClientOptions(mcpclient.WithSamplingHandler(model)))
	r.Start()
	ask := func(prompt string) {
		t.Helper()
		got, err := rig.CallTool(r.Ctx(), r.C, "ask", map[string]any{"prompt": prompt})
		if err != nil || got != strings.ToUpper(prompt) {
			t.Fatalf("ask %q = %q, %v", prompt, got, err)
		}
	}
	ask("before")
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("re-initialize")
	ask("after")
	if s := r.C.Stats(); s.Reinitializations != 1 || model.served.Load() != 2 {
		t.Errorf("%d re-initializations, %d sampling requests served; want 1 and 2", s.Reinitializations, model.served.Load())
	}
}
