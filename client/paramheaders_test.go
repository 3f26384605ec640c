package client

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// SEP-2243: on 2026-07-28 a tool's x-mcp-header arguments travel in
// Mcp-Param-* headers too, and mcp-go's server refuses a call without them
// (-32020) before running it. A user who calls such a tool without listing
// the tools first, or whose listing went out on another session of the
// pool, gets the call answered, run once.
func TestParamHeadersWithoutListing(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pool        int
		listFirst   bool
		calls, list int64 // tools/call the server gets for 4 calls, and at most so many tools/list
	}{
		// The first call is refused, the tools are listed, and it is sent
		// again with its headers; the others have them at once.
		{"never listed", 1, false, 5, 1},
		// Listed on one session of the pool; the calls go out on all. A
		// session the pool opens after the listing lists again
		// (listings.Cache.RefreshTools), so up to one listing per session.
		{"listed on another session", 3, true, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, testserver.Config{Era: testserver.StatelessEra, SchemaTools: true})
			c := newClient(t, srv.URL(), WithPoolSize(tc.pool))
			ctx := testContext(t)
			if tc.listFirst {
				if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 4 {
				res, err := c.CallTool(ctx, toolCall("route", map[string]any{"region": "eu-west", "note": "n"}))
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if text, _ := res.Content[0].(mcp.TextContent); res.IsError || text.Text != "eu-west" {
					t.Fatalf("call %d: %+v", i, res.Content)
				}
			}
			if n := srv.ToolRuns("route"); n != 4 {
				t.Errorf("route ran %d times for 4 calls", n)
			}
			if n := srv.RPCs("tools/call"); n != tc.calls {
				t.Errorf("%d tools/call sent, want %d", n, tc.calls)
			}
			if n := srv.RPCs("tools/list"); n < 1 || n > tc.list {
				t.Errorf("%d tools/list sent, want 1 to %d", n, tc.list)
			}
		})
	}
}

// A server that refuses a call for its headers whatever they are: the call
// is sent again once with the headers the tool's definition calls for, and
// then the refusal is the caller's answer; the tool never ran.
func TestParamHeadersRefusedForGood(t *testing.T) {
	srv := startServer(t, testserver.Config{Era: testserver.StatelessEra, SchemaTools: true})
	c := newClient(t, srv.URL())
	ctx := testContext(t)
	srv.FailPOSTsAnswer(1000, 400, "", mcp.HEADER_MISMATCH, false, "tools/call")
	_, err := c.CallTool(ctx, toolCall("route", map[string]any{"region": "eu-west"}))
	if err == nil {
		t.Fatal("a call refused for its headers for good succeeded")
	}
	if n := srv.RPCs("tools/call"); n != 2 {
		t.Errorf("%d tools/call sent, want 2: the one refused, the one with the headers", n)
	}
	if n := srv.ToolRuns("route"); n != 0 {
		t.Errorf("route ran %d times", n)
	}
}
