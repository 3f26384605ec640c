package client

import (
	"context"
	"net/http"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func startServer(t *testing.T, cfg testserver.Config) *testserver.Server {
	t.Helper()
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t *testing.T, url string, opts ...Option) *ResilientClient {
	t.Helper()
	c, err := New(url, append([]Option{WithKeepAlive(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Once a client has seen the endpoint speak the session era, a new session
// is initialized at once: server/discover, which a session-era server
// answers with 400, is asked only on the first connect.
func TestKnownSessionEraSkipsDiscover(t *testing.T) {
	for _, listening := range []bool{false, true} {
		srv := startServer(t, testserver.Config{Era: testserver.SessionEra})
		c := newClient(t, srv.URL())
		if listening { // sessions then open the GET event stream
			c.OnNotification(func(mcp.JSONRPCNotification) {})
		}
		if _, err := c.Initialize(testContext(t), mcp.InitializeRequest{}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			if err := c.Ping(testContext(t)); err != nil {
				t.Fatalf("ping after restart %d: %v", i, err)
			}
		}
		if n := c.Stats().Reinitializations; n != 3 {
			t.Fatalf("listening=%v: %d re-initializations for 3 restarts", listening, n)
		}
		if n := srv.RPCs("server/discover"); n != 1 {
			t.Errorf("listening=%v: server/discover sent %d times for 4 sessions; want once, on the first connect", listening, n)
		}
	}
}

// In the stateless era server/discover is the handshake, and the versions
// its answer lists are read from it: no second server/discover to confirm
// the era.
func TestStatelessHandshakeIsOneRequest(t *testing.T) {
	srv := startServer(t, testserver.Config{Era: testserver.StatelessEra})
	c := newClient(t, srv.URL())
	if _, err := c.Initialize(testContext(t), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	if !mcp.IsModernProtocol(c.ProtocolVersion()) {
		t.Fatalf("negotiated %s with a stateless-era server", c.ProtocolVersion())
	}
	if n, posts := srv.RPCs("server/discover"), srv.HTTPRequests("POST"); n != 1 || posts != 1 {
		t.Errorf("%d server/discover in %d POSTs to open a stateless-era session; want 1 in 1", n, posts)
	}
}

// F13 with a server that drops the session era's handshake altogether: the
// remembered era is refused, and the client negotiates afresh.
func TestRememberedEraRefusedIsNegotiatedAgain(t *testing.T) {
	srv := startServer(t, testserver.Config{Era: testserver.SessionEra})
	c := newClient(t, srv.URL())
	if _, err := c.Initialize(testContext(t), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	if mcp.IsModernProtocol(c.ProtocolVersion()) {
		t.Fatalf("negotiated %s with a session-era server", c.ProtocolVersion())
	}
	srv.Reconfigure(testserver.Config{NoHandshake: true})
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// A new request opens a new session, as a restart would.
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo.Name = "again"
	if _, err := c.Initialize(testContext(t), req); err != nil {
		t.Fatalf("Initialize against the changed server: %v", err)
	}
	if !mcp.IsModernProtocol(c.ProtocolVersion()) {
		t.Errorf("on %s after the server dropped the session era", c.ProtocolVersion())
	}
	if err := c.Ping(testContext(t)); err != nil {
		t.Fatal(err)
	}
}

// The session-era handshake the client goes straight to keeps a protocol
// version the caller pinned.
func TestPinnedVersionOutlivesTheRememberedEra(t *testing.T) {
	const pinned = mcp.ProtocolVersion20250618
	srv := startServer(t, testserver.Config{Era: testserver.SessionEra})
	c := newClient(t, srv.URL(), WithClientOptions(mcpclient.WithProtocolVersion(pinned)))
	if _, err := c.Initialize(testContext(t), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != pinned || c.Stats().Reinitializations != 1 {
		t.Errorf("after a re-initialization: version %s, %d re-initializations; want %s and 1", v, c.Stats().Reinitializations, pinned)
	}
}

// A connection that breaks under the handshake's server/discover (here a
// pooled one a middlebox forgot) says nothing of the era: the attempt fails
// and is made again, rather than mcp-go taking the server for a session-era
// one and the client remembering that.
func TestBrokenConnectionUnderDiscoverIsNoEvidenceOfTheEra(t *testing.T) {
	srv := startServer(t, testserver.Config{Era: testserver.StatelessEra})
	proxy, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	tr := &http.Transport{DialContext: proxy.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	c := newClient(t, proxy.URL("/mcp"), WithHTTPClient(&http.Client{Transport: tr}))
	if _, err := c.Initialize(testContext(t), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	proxy.DropAll()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo.Name = "again"
	if _, err := c.Initialize(testContext(t), req); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); !mcp.IsModernProtocol(v) || srv.RPCs("initialize") != 0 {
		t.Errorf("on %s after %d initialize requests to a stateless-era server", v, srv.RPCs("initialize"))
	}
}
