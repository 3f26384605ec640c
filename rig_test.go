package resilientmcp_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a real server, optionally a fault proxy in front of it, and a
// ResilientClient connected to it, all torn down with the test.
type rig struct {
	t     *testing.T
	srv   *testserver.Server
	proxy *faultproxy.Proxy
	c     *client.ResilientClient
}

func newRig(t *testing.T, cfg testserver.Config, viaProxy bool, opts ...client.Option) *rig {
	t.Helper()
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	r := &rig{t: t, srv: srv}
	url := srv.URL()
	if viaProxy {
		r.proxy, err = faultproxy.New(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.proxy.Close() })
		url = r.proxy.URL("/mcp")
		// Every connection goes through the proxy's dialer, which counts
		// the attempts even while the proxy refuses them.
		tr := &http.Transport{DialContext: r.proxy.DialContext, MaxIdleConnsPerHost: 64, IdleConnTimeout: 50 * time.Second}
		t.Cleanup(tr.CloseIdleConnections)
		opts = append([]client.Option{client.WithHTTPClient(&http.Client{Transport: tr})}, opts...)
	}
	r.c, err = client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	return r
}

// ctx is a generous deadline that only a hung test reaches.
func (r *rig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	r.t.Cleanup(cancel)
	return ctx
}

// start initializes and lists tools, which caches the annotations that
// decide what may be replayed.
func (r *rig) start() *mcp.InitializeResult {
	r.t.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "resilientmcp-test", Version: "0"}
	res, err := r.c.Initialize(r.ctx(), req)
	if err != nil {
		r.t.Fatalf("Initialize: %v", err)
	}
	if _, err := r.c.ListTools(r.ctx(), mcp.ListToolsRequest{}); err != nil {
		r.t.Fatalf("ListTools: %v", err)
	}
	return res
}

func callTool(ctx context.Context, c *client.ResilientClient, name string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Content) != 1 {
		return "", fmt.Errorf("%s returned %d contents", name, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("%s returned %T", name, res.Content[0])
	}
	if res.IsError {
		return "", fmt.Errorf("%s failed: %s", name, text.Text)
	}
	return text.Text, nil
}

// mustEcho calls the read-only echo tool and checks the answer is its own.
func (r *rig) mustEcho(text string) {
	r.t.Helper()
	got, err := callTool(r.ctx(), r.c, "echo", map[string]any{"text": text})
	if err != nil || got != text {
		r.t.Fatalf("echo %q = %q, %v", text, got, err)
	}
}

func (r *rig) increment() error {
	_, err := callTool(r.ctx(), r.c, "increment", nil)
	return err
}

// eventually waits, boundedly, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

var bothEras = []testserver.Era{testserver.SessionEra, testserver.StatelessEra}
