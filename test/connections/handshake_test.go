package connections

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// The first connection opens one session, however the era is found. A
// client that listens for notifications makes its first call, with no
// Initialize before it, against a server whose initialize takes 1 s (as
// frameworks that wait for the client's capabilities do). In the session
// era that is one initialize, no DELETE, and the one session carries the
// event stream; in the stateless era one server/discover and nothing else.
func TestFirstConnectOpensOneSession(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			srv, err := testserver.Start(testserver.Config{Era: era, SlowInitialize: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			c, err := client.New(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.OnNotification(func(mcp.JSONRPCNotification) {})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if got, err := rig.CallTool(ctx, c, "echo", map[string]any{"text": "first"}); err != nil || got != "first" {
				t.Fatalf("first call = %q, %v", got, err)
			}

			inits, deletes := srv.RPCs("initialize"), srv.HTTPRequests("DELETE")
			if opened := c.Stats().SessionsOpened; opened != 1 {
				t.Errorf("%d sessions opened for the first call, want 1", opened)
			}
			if era == testserver.StatelessEra {
				if discovers := srv.RPCs("server/discover"); inits != 0 || discovers != 1 || deletes != 0 {
					t.Errorf("first connect: %d server/discover, %d initialize, %d DELETE; want 1, 0, 0", discovers, inits, deletes)
				}
				return
			}
			if inits != 1 || deletes != 0 {
				t.Errorf("first connect: %d initialize, %d DELETE; want 1 and none", inits, deletes)
			}
			rig.Eventually(t, "the session's event stream", func() bool { return srv.HTTPRequests("GET") > 0 })
			if inits, deletes := srv.RPCs("initialize"), srv.HTTPRequests("DELETE"); inits != 1 || deletes != 0 {
				t.Errorf("with the event stream open: %d initialize, %d DELETE; want 1 and none", inits, deletes)
			}
		})
	}
}
