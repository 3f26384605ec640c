package client

import (
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// F44: a server of the 2026-07-28 revision refuses the protocol version a
// call declared (400, -32022, data.supported). The call did not run: it is
// sent again once, with the newest version both speak, on the same
// session, and runs once.
func TestF44VersionRefusedOnACallIsSentAgain(t *testing.T) {
	srv := startServer(t, testserver.Config{Era: testserver.StatelessEra, RecordMeta: true})
	c := newClient(t, srv.URL())
	ctx := testContext(t)
	if _, err := c.CallTool(ctx, toolCall("echo", map[string]any{"text": "first"})); err != nil {
		t.Fatal(err)
	}
	srv.RefuseVersion(1, []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125}, "tools/call")
	calls, discovers := srv.RPCs("tools/call"), srv.RPCs("server/discover")

	res, err := c.CallTool(ctx, toolCall("increment", nil))
	if err != nil {
		t.Fatalf("increment refused once with -32022: %v; want it sent again and answered", err)
	}
	if res.IsError {
		t.Fatalf("increment failed: %+v", res.Content)
	}
	if n := srv.ToolRuns("increment"); n != 1 {
		t.Errorf("increment ran %d times, want 1", n)
	}
	if n := srv.RPCs("tools/call") - calls; n != 2 {
		t.Errorf("%d tools/call sent, want 2: the one refused, the one answered", n)
	}
	if n := srv.RPCs("server/discover") - discovers; n != 0 {
		t.Errorf("%d server/discover sent after the refusal, want none: the session is kept", n)
	}
	if n := c.Stats().Reinitializations; n != 0 {
		t.Errorf("%d re-initializations, want none", n)
	}
	if n := srv.RPCs("initialize"); n != 0 {
		t.Errorf("initialize sent %d times to a server of the stateless era", n)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Errorf("protocol version %q after the refusal, want %s", v, mcp.ProtocolVersion20260728)
	}
	// Every request declares the version, the client's capabilities and
	// its identity (SEP-2575; clientInfo is a SHOULD).
	for _, method := range []string{"server/discover", "tools/call"} {
		for _, meta := range srv.ReceivedMeta(method) {
			for _, key := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo} {
				if meta[key] == nil {
					t.Errorf("a %s carried no %s in its _meta: %v", method, key, meta)
				}
			}
		}
	}
}

// F44 in the handshake: the server refuses the server/discover that opens
// the first session. It is a server of the stateless era all the same:
// server/discover is sent again, and the session era's initialize (which
// this server does not take) is never sent.
func TestF44VersionRefusedInTheHandshake(t *testing.T) {
	srv := startServer(t, testserver.Config{NoHandshake: true})
	srv.RefuseVersion(1, []string{mcp.ProtocolVersion20260728}, "server/discover")
	c := newClient(t, srv.URL())

	if _, err := c.CallTool(testContext(t), toolCall("increment", nil)); err != nil {
		t.Fatalf("first call, its server/discover refused once: %v", err)
	}
	if n := srv.RPCs("initialize"); n != 0 {
		t.Errorf("initialize sent %d times after a refusal by a server of the stateless era", n)
	}
	if n := srv.RPCs("server/discover"); n != 2 {
		t.Errorf("server/discover sent %d times, want 2: the one refused, the one answered", n)
	}
	if n := srv.ToolRuns("increment"); n != 1 {
		t.Errorf("increment ran %d times, want 1", n)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Errorf("protocol version %q, want %s", v, mcp.ProtocolVersion20260728)
	}
}

// A server that refuses every request's version, though it lists it: each
// request is sent again once, the call ends with the refusal, unrun, and no
// initialize or storm of requests follows.
func TestF44VersionRefusedForGood(t *testing.T) {
	t.Run("call", func(t *testing.T) {
		srv := startServer(t, testserver.Config{Era: testserver.StatelessEra})
		c := newClient(t, srv.URL(), WithMaxAttempts(3))
		ctx := testContext(t)
		if _, err := c.CallTool(ctx, toolCall("echo", map[string]any{"text": "first"})); err != nil {
			t.Fatal(err)
		}
		srv.RefuseVersion(1000, []string{mcp.ProtocolVersion20260728}, "tools/call", "server/discover")
		_, err := c.CallTool(ctx, toolCall("increment", nil))
		if err == nil || errors.Is(err, ErrOutcomeUnknown) || !mcp.IsUnsupportedProtocolVersion(err) {
			t.Fatalf("increment, every version refused: %v; want the refusal, not ErrOutcomeUnknown", err)
		}
		if n := srv.ToolRuns("increment"); n != 0 {
			t.Errorf("increment ran %d times", n)
		}
		if n := srv.RPCs("tools/call") + srv.RPCs("server/discover"); n > 8 {
			t.Errorf("%d requests for one call refused for good: a retry storm", n)
		}
		if n := srv.RPCs("initialize"); n != 0 {
			t.Errorf("initialize sent %d times", n)
		}
	})
	t.Run("handshake", func(t *testing.T) {
		srv := startServer(t, testserver.Config{NoHandshake: true})
		srv.RefuseVersion(1000, []string{mcp.ProtocolVersion20260728}, "server/discover")
		c := newClient(t, srv.URL())
		_, err := c.Initialize(testContext(t), mcp.InitializeRequest{})
		if err == nil || !mcp.IsUnsupportedProtocolVersion(err) {
			t.Fatalf("Initialize, every version refused: %v; want the refusal", err)
		}
		if n := srv.RPCs("initialize"); n != 0 {
			t.Errorf("initialize sent %d times after a refusal by a server of the stateless era", n)
		}
		if n := srv.RPCs("server/discover"); n > 4 {
			t.Errorf("server/discover sent %d times: a retry storm", n)
		}
	})
}

func toolCall(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}
