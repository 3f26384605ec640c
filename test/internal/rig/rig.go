package rig

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// Rig is a real server, optionally a fault proxy in front of it, and a
// ResilientClient connected to it, all torn down with the test.
type Rig struct {
	T     *testing.T
	Srv   *testserver.Server
	Proxy *faultproxy.Proxy
	C     *client.ResilientClient
}

// New starts a test server with cfg, behind a fault proxy if viaProxy, and
// a ResilientClient of it with opts; all are closed when the test ends.
func New(t *testing.T, cfg testserver.Config, viaProxy bool, opts ...client.Option) *Rig {
	t.Helper()
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	r := &Rig{T: t, Srv: srv}
	url := srv.URL()
	if viaProxy {
		r.Proxy, err = faultproxy.New(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Proxy.Close() })
		url = r.Proxy.URL("/mcp")
		// Every connection goes through the proxy's dialer, which counts
		// the attempts even while the proxy refuses them.
		tr := &http.Transport{DialContext: r.Proxy.DialContext, MaxIdleConnsPerHost: 64, IdleConnTimeout: 50 * time.Second}
		t.Cleanup(tr.CloseIdleConnections)
		opts = append([]client.Option{client.WithHTTPClient(&http.Client{Transport: tr})}, opts...)
	}
	r.C, err = client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.C.Close() })
	return r
}

// ctx is a generous deadline that only a hung test reaches.
func (r *Rig) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	r.T.Cleanup(cancel)
	return ctx
}

// start initializes, as a new user would: it does not list tools. The
// client learns the annotations that decide what may be replayed itself.
func (r *Rig) Start() *mcp.InitializeResult {
	r.T.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "resilientmcp-test", Version: "0"}
	res, err := r.C.Initialize(r.Ctx(), req)
	if err != nil {
		r.T.Fatalf("Initialize: %v", err)
	}
	return res
}

// listTools lists tools as a user who does would.
func (r *Rig) ListTools() {
	r.T.Helper()
	if _, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
		r.T.Fatalf("ListTools: %v", err)
	}
}

// BothWays runs a scenario as a user who never lists tools and as one who
// lists them first: the replay decisions must be the same.
func BothWays(t *testing.T, scenario func(t *testing.T, listFirst bool)) {
	for _, list := range []bool{false, true} {
		name := "unlisted"
		if list {
			name = "listed"
		}
		t.Run(name, func(t *testing.T) { scenario(t, list) })
	}
}

// ToolLists is how many tools/list the server answered beyond the caller's
// own: the client's learning. A listing sent on a session the server no
// longer knows (404), and sent again on the new one, is one listing.
func (r *Rig) ToolLists(listFirst bool) int64 {
	n := r.Srv.Answered("tools/list")
	if listFirst {
		n--
	}
	return n
}

// ToolRequest is a tools/call of name with args.
func ToolRequest(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

// CallTool calls a tool that answers with one text, and returns the text.
func CallTool(ctx context.Context, c *client.ResilientClient, name string, args map[string]any) (string, error) {
	return CallToolRequest(ctx, c, ToolRequest(name, args))
}

// CallToolRequest is callTool for a request built by the caller.
func CallToolRequest(ctx context.Context, c *client.ResilientClient, req mcp.CallToolRequest) (string, error) {
	name := req.Params.Name
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
func (r *Rig) MustEcho(text string) {
	r.T.Helper()
	got, err := CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": text})
	if err != nil || got != text {
		r.T.Fatalf("echo %q = %q, %v", text, got, err)
	}
}

func (r *Rig) Increment() error {
	_, err := CallTool(r.Ctx(), r.C, "increment", nil)
	return err
}

// Eventually waits, boundedly, for cond.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// BothEras are the test server's two eras, for scenarios that run in each.
var BothEras = []testserver.Era{testserver.SessionEra, testserver.StatelessEra}

// LogRecorder keeps what the client logs, for tests that check a log line.
type LogRecorder struct {
	Mu      sync.Mutex
	Records []slog.Record
}

func (l *LogRecorder) Logger() *slog.Logger { return slog.New(recordHandler{l}) }

// has reports whether a record at level has msg in its message and the
// attribute key=value.
func (l *LogRecorder) Has(level slog.Level, msg, key, value string) bool {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	for _, r := range l.Records {
		if r.Level != level || !strings.Contains(r.Message, msg) {
			continue
		}
		found := false
		r.Attrs(func(a slog.Attr) bool {
			found = a.Key == key && a.Value.String() == value
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

func (l *LogRecorder) String() string {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	var b strings.Builder
	for _, r := range l.Records {
		fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s", a); return true })
		b.WriteByte('\n')
	}
	return b.String()
}

type recordHandler struct{ l *LogRecorder }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.l.Mu.Lock()
	h.l.Records = append(h.l.Records, r.Clone())
	h.l.Mu.Unlock()
	return nil
}

// FastBackOff makes any loop that asks again do so every 10 ms, so that a
// loop the policy should have stopped shows within a short wait.
func FastBackOff() backoff.BackOff { return backoff.NewConstantBackOff(10 * time.Millisecond) }
