package restarts

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Listen keeps the notifications coming across a restart of the server:
// the stream is opened again, and a Listen that ends narrows it again.
func TestListenAcrossRestart(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
	updates := make(chan string, 64)
	r.C.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			updates <- uri
		}
	})
	r.Start()
	ctx, cancel := context.WithCancel(r.Ctx())
	listened := make(chan error, 1)
	go func() {
		listened <- r.C.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{testserver.CounterURI}})
	}()
	hear := func(what string) {
		t.Helper()
		for range 400 {
			r.Srv.UpdateResource(testserver.CounterURI)
			select {
			case uri := <-updates:
				if uri != testserver.CounterURI {
					t.Fatalf("update of %q", uri)
				}
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Fatalf("no update heard %s", what)
	}
	hear("before the restart")
	if got := r.C.PendingSubscriptionFilter().ResourceSubscriptions; !slices.Equal(got, []string{testserver.CounterURI}) {
		t.Errorf("PendingSubscriptionFilter while listening: %v", got)
	}
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	hear("after the restart")

	cancel()
	if err := <-listened; err != nil {
		t.Errorf("Listen = %v when its context ended, want nil", err)
	}
	if got := r.C.PendingSubscriptionFilter().ResourceSubscriptions; len(got) != 0 {
		t.Errorf("PendingSubscriptionFilter after Listen ended: %v", got)
	}

	// ListenAsync: the same, until stop.
	stop, err := r.C.ListenAsync(r.Ctx(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{testserver.CounterURI}}, nil)
	if err != nil {
		t.Fatalf("ListenAsync: %v", err)
	}
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	hear("through ListenAsync after a restart")
	stop()
}

// In the session era notifications need no opting in: Listen answers as
// mcp-go's does, at once.
func TestListenInTheSessionEra(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
	r.Start()
	err := r.C.Listen(r.Ctx(), mcp.SubscriptionFilter{ToolsListChanged: true})
	if err == nil || errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("Listen in the session era = %v, want mcp-go's error", err)
	}
	if _, err := r.C.ListenAsync(r.Ctx(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil); err == nil {
		t.Error("ListenAsync in the session era succeeded")
	}
}
