package resilientmcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
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

// start initializes, as a new user would: it does not list tools. The
// client learns the annotations that decide what may be replayed itself.
func (r *rig) start() *mcp.InitializeResult {
	r.t.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "resilientmcp-test", Version: "0"}
	res, err := r.c.Initialize(r.ctx(), req)
	if err != nil {
		r.t.Fatalf("Initialize: %v", err)
	}
	return res
}

// listTools lists tools as a user who does would.
func (r *rig) listTools() {
	r.t.Helper()
	if _, err := r.c.ListTools(r.ctx(), mcp.ListToolsRequest{}); err != nil {
		r.t.Fatalf("ListTools: %v", err)
	}
}

// bothWays runs a scenario as a user who never lists tools and as one who
// lists them first: the replay decisions must be the same.
func bothWays(t *testing.T, scenario func(t *testing.T, listFirst bool)) {
	for _, list := range []bool{false, true} {
		name := "unlisted"
		if list {
			name = "listed"
		}
		t.Run(name, func(t *testing.T) { scenario(t, list) })
	}
}

// toolLists is how many tools/list the server answered beyond the caller's
// own: the client's learning.
func (r *rig) toolLists(listFirst bool) int64 {
	n := r.srv.RPCs("tools/list")
	if listFirst {
		n--
	}
	return n
}

// toolRequest is a tools/call of name with args.
func toolRequest(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

// callTool calls a tool that answers with one text, and returns the text.
func callTool(ctx context.Context, c *client.ResilientClient, name string, args map[string]any) (string, error) {
	return callToolRequest(ctx, c, toolRequest(name, args))
}

// callToolRequest is callTool for a request built by the caller.
func callToolRequest(ctx context.Context, c *client.ResilientClient, req mcp.CallToolRequest) (string, error) {
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

// logRecorder keeps what the client logs, for tests that check a log line.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) logger() *slog.Logger { return slog.New(recordHandler{l}) }

// has reports whether a record at level has msg in its message and the
// attribute key=value.
func (l *logRecorder) has(level slog.Level, msg, key, value string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
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

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.records {
		fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s", a); return true })
		b.WriteByte('\n')
	}
	return b.String()
}

type recordHandler struct{ l *logRecorder }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.l.mu.Lock()
	h.l.records = append(h.l.records, r.Clone())
	h.l.mu.Unlock()
	return nil
}
