package testserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a started but uninitialised mcp-go client. It is closed
// before the server (cleanups run last-in first-out).
func newClient(t *testing.T, url string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	opts = append(opts, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		t.Fatalf("NewStreamableHttpClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatalf("client Start: %v", err)
	}
	return c
}

func initialize(ctx context.Context, c *client.Client) (*mcp.InitializeResult, error) {
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "testserver-test", Version: "0.0.1"}
	return c.Initialize(ctx, req)
}

func connect(t *testing.T, url string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	c := newClient(t, url, opts...)
	if _, err := initialize(testCtx(t), c); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return c
}

func callTool(ctx context.Context, c *client.Client, name string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", errors.New("empty content")
	}
	text, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		return "", fmt.Errorf("content %T is not text", res.Content[0])
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %s", text.Text)
	}
	return text.Text, nil
}

func mustCall(t *testing.T, c *client.Client, name string, args map[string]any, want string) {
	t.Helper()
	got, err := callTool(testCtx(t), c, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got != want {
		t.Fatalf("%s = %q, want %q", name, got, want)
	}
}

func describe(err error) string {
	return fmt.Sprintf("type=%T msg=%q Is(ErrSessionTerminated)=%v Is(ErrAuthorizationRequired)=%v Is(io.EOF)=%v",
		err, err, errors.Is(err, transport.ErrSessionTerminated), errors.Is(err, transport.ErrAuthorizationRequired),
		errors.Is(err, io.EOF))
}

// rawPost sends one JSON-RPC body with a fresh, non-pooled connection.
func rawPost(t *testing.T, url, host, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestEraNegotiation(t *testing.T) {
	for _, tc := range []struct {
		era     Era
		want    string
		session bool
	}{
		{SessionEra, mcp.ProtocolVersion20251125, true},
		{StatelessEra, mcp.ProtocolVersion20260728, false},
	} {
		t.Run(tc.era.String(), func(t *testing.T) {
			s := startServer(t, Config{Era: tc.era})
			c := connect(t, s.URL())
			if got := c.ProtocolVersion(); got != tc.want {
				t.Fatalf("ProtocolVersion = %q, want %q", got, tc.want)
			}
			if tc.era == SessionEra && c.ProtocolVersion() >= mcp.ProtocolVersion20260728 {
				t.Fatalf("session era negotiated %q", c.ProtocolVersion())
			}
			if got := c.GetSessionId() != ""; got != tc.session {
				t.Fatalf("has session id = %v, want %v", got, tc.session)
			}
			if s.RPCs("server/discover") == 0 {
				t.Fatal("client did not probe server/discover")
			}
			if got := s.RPCs("initialize"); (got > 0) != tc.session {
				t.Fatalf("RPCs(initialize) = %d", got)
			}
		})
	}
}

func TestToolsRunAndCount(t *testing.T) {
	for _, era := range []Era{SessionEra, StatelessEra} {
		t.Run(era.String(), func(t *testing.T) {
			s := startServer(t, Config{Era: era})
			c := connect(t, s.URL())
			mustCall(t, c, "echo", map[string]any{"text": "hi"}, "hi")
			mustCall(t, c, "add", map[string]any{"a": 2, "b": 3.5}, "5.5")
			mustCall(t, c, "increment", nil, "1")
			mustCall(t, c, "increment", nil, "2")
			mustCall(t, c, "slow", map[string]any{"ms": 5}, "done")
			for tool, want := range map[string]int64{"echo": 1, "add": 1, "increment": 2, "slow": 1, "multiply": 0} {
				if got := s.ToolRuns(tool); got != want {
					t.Errorf("ToolRuns(%s) = %d, want %d", tool, got, want)
				}
			}
			if got := s.RPCs("tools/call"); got != 5 {
				t.Errorf("RPCs(tools/call) = %d, want 5", got)
			}
			if s.HTTPRequests("POST") < 6 {
				t.Errorf("HTTPRequests(POST) = %d", s.HTTPRequests("POST"))
			}
			res, err := c.ReadResource(testCtx(t), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: CounterURI}})
			if err != nil {
				t.Fatalf("ReadResource: %v", err)
			}
			if tc, ok := res.Contents[0].(mcp.TextResourceContents); !ok || tc.Text != "2" {
				t.Errorf("counter resource = %#v", res.Contents[0])
			}
			s.ResetCounters()
			if s.ToolRuns("increment") != 0 || s.RPCs("tools/call") != 0 || s.HTTPRequests("POST") != 0 {
				t.Error("ResetCounters left counts")
			}
			mustCall(t, c, "increment", nil, "1")
		})
	}
}

func TestSlowHonoursCancellation(t *testing.T) {
	s := startServer(t, Config{Era: StatelessEra})
	c := connect(t, s.URL())
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := callTool(ctx, c, "slow", map[string]any{"ms": 5000}); err == nil {
		t.Fatal("slow call did not fail")
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("cancellation not honoured")
	}
}

// newPooledClient connects through its own http.Transport, so the test can
// drop the client's idle keep-alive connections the way a client does once it
// notices the server closed them.
func newPooledClient(t *testing.T, url string) (*client.Client, *http.Transport) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return connect(t, url, transport.WithHTTPBasicClient(&http.Client{Transport: tr})), tr
}

func TestRestartSessionEraTerminatesSession(t *testing.T) {
	s := startServer(t, Config{Era: SessionEra})
	addr := s.Addr()
	c, tr := newPooledClient(t, s.URL())
	mustCall(t, c, "increment", nil, "1")
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Addr() != addr || s.URL() != "http://"+addr+"/mcp" {
		t.Fatalf("address changed: %s -> %s", addr, s.Addr())
	}
	// Without this the call may instead go out on the pooled connection the
	// server just closed and fail with EOF (see TestCallRightAfterRestart).
	tr.CloseIdleConnections()
	_, err := callTool(testCtx(t), c, "increment", nil)
	if !errors.Is(err, transport.ErrSessionTerminated) {
		t.Fatalf("call after restart: %s", describe(err))
	}
	t.Logf("session era, old session after Restart: %s", describe(err))
	if got := s.ToolRuns("increment"); got != 1 {
		t.Fatalf("ToolRuns(increment) = %d, want 1 (counters persist, 404 did not run)", got)
	}
	// The transport remembers the session ended: the next call fails without
	// a request reaching the server.
	posts := s.HTTPRequests("POST")
	_, err = callTool(testCtx(t), c, "echo", map[string]any{"text": "x"})
	if !errors.Is(err, transport.ErrSessionTerminated) || s.HTTPRequests("POST") != posts {
		t.Fatalf("second call on ended session: %s", describe(err))
	}
	// Re-initialising the same client opens a new session.
	if _, err := initialize(testCtx(t), c); err != nil {
		t.Fatalf("re-Initialize: %v", err)
	}
	mustCall(t, c, "increment", nil, "2")
}

// TestCallRightAfterRestart records what a call sent immediately after a
// restart sees: it races the client noticing that its pooled keep-alive
// connection was closed, so it either goes out on a new connection or fails
// on the dead one (net/http does not retry a POST).
func TestCallRightAfterRestart(t *testing.T) {
	for _, era := range []Era{SessionEra, StatelessEra} {
		t.Run(era.String(), func(t *testing.T) {
			s := startServer(t, Config{Era: era})
			outcomes := map[string]int{}
			for range 5 {
				c := connect(t, s.URL())
				mustCall(t, c, "echo", map[string]any{"text": "before"}, "before")
				if err := s.Restart(); err != nil {
					t.Fatalf("Restart: %v", err)
				}
				_, err := callTool(testCtx(t), c, "echo", map[string]any{"text": "after"})
				switch {
				case err == nil && era == StatelessEra:
					outcomes["ok"]++
				case errors.Is(err, transport.ErrSessionTerminated) && era == SessionEra:
					outcomes["ErrSessionTerminated"]++
				case deadConnection(err):
					outcomes["dead connection"]++
					t.Logf("%v: %s", era, describe(err))
				default:
					t.Fatalf("unexpected: %s", describe(err))
				}
			}
			t.Logf("%v: outcomes of a call right after Restart: %v", era, outcomes)
		})
	}
}

// deadConnection reports the ways net/http fails a POST sent on a pooled
// connection the server has closed: EOF or a reset once the request was
// written, or errServerClosedIdle (unexported) when it noticed in time.
func deadConnection(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		(err != nil && strings.Contains(err.Error(), "http: server closed idle connection"))
}

func TestFailPOSTsDropConnection(t *testing.T) {
	s := startServer(t, Config{Era: StatelessEra})
	c := connect(t, s.URL())
	s.FailPOSTs(1, 0, "", true, "tools/call")
	_, err := callTool(testCtx(t), c, "increment", nil)
	if !deadConnection(err) {
		t.Fatalf("want EOF, got %s", describe(err))
	}
	t.Logf("FailPOSTs(status 0, afterRun): %s", describe(err))
	if s.ToolRuns("increment") != 1 {
		t.Fatalf("ToolRuns = %d, want 1", s.ToolRuns("increment"))
	}
	mustCall(t, c, "increment", nil, "2")
}

func TestToolAnnotations(t *testing.T) {
	s := startServer(t, Config{Era: SessionEra})
	type hints struct{ readOnly, idempotent bool }
	check := func(want map[string]hints) {
		t.Helper()
		c := connect(t, s.URL())
		res, err := c.ListTools(testCtx(t), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		got := map[string]hints{}
		for _, tool := range res.Tools {
			a := tool.Annotations
			if a.ReadOnlyHint == nil || a.IdempotentHint == nil || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Fatalf("%s: hints not explicit: %+v", tool.Name, a)
			}
			got[tool.Name] = hints{*a.ReadOnlyHint, *a.IdempotentHint}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("tools = %v, want %v", got, want)
		}
	}
	check(map[string]hints{
		"echo": {true, true}, "add": {false, true}, "increment": {false, false}, "slow": {false, false}, "ask": {false, false},
		"profile": {false, false}, "progress": {false, false}, "progressRead": {true, true}, "work": {false, false},
	})
	s.Reconfigure(Config{Era: SessionEra, Tools: ToolsChanged})
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	check(map[string]hints{
		"echo": {true, true}, "add": {false, false}, "increment": {true, false}, "slow": {false, false},
		"multiply": {true, true}, "ask": {false, false}, "profile": {false, false},
		"progress": {false, false}, "progressRead": {true, true}, "work": {false, false},
	})
	c := connect(t, s.URL())
	mustCall(t, c, "multiply", map[string]any{"a": 3, "b": 2.5}, "7.5")
}

func TestFailPOSTsAfterRun(t *testing.T) {
	for _, era := range []Era{SessionEra, StatelessEra} {
		t.Run(era.String(), func(t *testing.T) {
			s := startServer(t, Config{Era: era})
			c := connect(t, s.URL())
			s.FailPOSTs(1, http.StatusBadGateway, "", true, "tools/call")
			_, err := callTool(testCtx(t), c, "increment", nil)
			if err == nil || !strings.Contains(err.Error(), "502") {
				t.Fatalf("want 502 error, got %v", err)
			}
			t.Logf("%v, FailPOSTs(502, afterRun): %s", era, describe(err))
			if got := s.ToolRuns("increment"); got != 1 {
				t.Fatalf("ToolRuns = %d, want 1", got)
			}
			mustCall(t, c, "increment", nil, "2") // injection used up
		})
	}
}

func TestFailPOSTsBeforeRun(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusInternalServerError} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			s := startServer(t, Config{Era: SessionEra})
			c := connect(t, s.URL())
			s.FailPOSTs(2, status, "1", false, "tools/call")
			// A ping is not a tools/call, so it is neither failed nor counted.
			//lint:ignore SA1019 the session era's ping is what is tested
			if err := c.Ping(testCtx(t)); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			_, err := callTool(testCtx(t), c, "increment", nil)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprint(status)) {
				t.Fatalf("want %d error, got %v", status, err)
			}
			t.Logf("FailPOSTs(%d, before run): %s", status, describe(err))
			if got := s.ToolRuns("increment"); got != 0 {
				t.Fatalf("ToolRuns = %d, want 0", got)
			}
			if got := s.RPCs("tools/call"); got != 1 {
				t.Fatalf("RPCs(tools/call) = %d, want 1 (failed requests count)", got)
			}
			// The second injection is visible on the wire with Retry-After.
			resp, body := rawPost(t, s.URL(), "", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}}`, nil)
			if resp.StatusCode != status || resp.Header.Get("Retry-After") != "1" || body != fmt.Sprintf("injected %d", status) {
				t.Fatalf("raw: %d %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
			mustCall(t, c, "increment", nil, "1")
		})
	}
}

func TestDeclineGET(t *testing.T) {
	s := startServer(t, Config{Era: SessionEra, DeclineGET: true})
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, s.URL(), nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, _ := do(t, req)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET status = %d", resp.StatusCode)
	}
	if s.HTTPRequests("GET") != 1 {
		t.Fatalf("HTTPRequests(GET) = %d", s.HTTPRequests("GET"))
	}
	// A continuously listening client still works over POST.
	//lint:ignore SA1019 the session era's GET stream is what is tested
	c := connect(t, s.URL(), transport.WithContinuousListening())
	mustCall(t, c, "echo", map[string]any{"text": "ok"}, "ok")
}

func TestOnlyMCPPathRouted(t *testing.T) {
	s := startServer(t, Config{})
	resp, _ := rawPost(t, "http://"+s.Addr()+"/other", "", initBody, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status = %d", resp.StatusCode)
	}
}

func TestHostHeaderOfProxyPort(t *testing.T) {
	s := startServer(t, Config{Era: SessionEra})
	resp, body := rawPost(t, s.URL(), "127.0.0.1:1", initBody, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("Host 127.0.0.1:1: %d %s", resp.StatusCode, body)
	}
}

func TestNoHandshake(t *testing.T) {
	s := startServer(t, Config{NoHandshake: true})
	resp, body := rawPost(t, s.URL(), "", initBody, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"code":-32601`) {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	c := newClient(t, s.URL())
	if _, err := initialize(testCtx(t), c); err != nil || c.ProtocolVersion() != mcp.ProtocolVersion20260728 {
		t.Fatalf("Initialize = %v, version %q; want the stateless era through server/discover", err, c.ProtocolVersion())
	}
	if _, err := callTool(testCtx(t), c, "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedDiscover(t *testing.T) {
	s := startServer(t, Config{MalformedDiscover: true})
	resp, body := rawPost(t, s.URL(), "", `{"jsonrpc":"2.0","id":"abc","method":"server/discover","params":{}}`, nil)
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != `{"jsonrpc":"2.0","id":"abc","result":{}}` {
		t.Fatalf("discover: %d %s", resp.StatusCode, body)
	}
	resp, body = rawPost(t, s.URL(), "", initBody, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}

	c := newClient(t, s.URL())
	res, err := initialize(testCtx(t), c)
	t.Logf("MalformedDiscover: Initialize err=%v result=%+v ProtocolVersion()=%q session=%q",
		err, res, c.ProtocolVersion(), c.GetSessionId())
	// mcp-go v1.2.1 takes the empty discover result as success and stays on
	// 2026-07-28, which the session-era server behind then rejects.
	if err != nil || c.ProtocolVersion() != mcp.ProtocolVersion20260728 {
		t.Fatalf("mcp-go's reaction changed: err=%v version=%q", err, c.ProtocolVersion())
	}
	_, err = callTool(testCtx(t), c, "echo", map[string]any{"text": "x"})
	t.Logf("MalformedDiscover: CallTool after Initialize: %s", describe(err))
	var unsupported mcp.UnsupportedProtocolVersionError
	if !errors.As(err, &unsupported) || s.ToolRuns("echo") != 0 {
		t.Fatalf("CallTool: %s", describe(err))
	}
}

func TestNotMCP(t *testing.T) {
	s := startServer(t, Config{NotMCP: true})
	c := newClient(t, s.URL())
	_, err := initialize(testCtx(t), c)
	if err == nil {
		t.Fatal("Initialize succeeded against a non-MCP endpoint")
	}
	t.Logf("NotMCP: Initialize: %s", describe(err))
	var te *transport.Error
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "unexpected content type: text/html") {
		t.Fatalf("NotMCP: %s", describe(err))
	}
}

func TestRequireToken(t *testing.T) {
	s := startServer(t, Config{Era: SessionEra, RequireToken: "s3cret"})
	c := newClient(t, s.URL())
	_, err := initialize(testCtx(t), c)
	if !errors.Is(err, transport.ErrAuthorizationRequired) {
		t.Fatalf("Initialize without token: %s", describe(err))
	}
	var authErr *transport.AuthorizationRequiredError
	t.Logf("RequireToken: Initialize: %s As(*AuthorizationRequiredError)=%v", describe(err), errors.As(err, &authErr))
	c = connect(t, s.URL(), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer s3cret"}))
	mustCall(t, c, "echo", map[string]any{"text": "authed"}, "authed")
}

func TestLifecycle(t *testing.T) {
	s := startServer(t, Config{Era: StatelessEra, SessionIdleTTL: time.Minute})
	addr := s.Addr()
	s.Stop()
	s.Stop()
	if _, err := http.Post(s.URL(), "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("stopped server answered")
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	if s.Addr() != addr {
		t.Fatalf("address changed")
	}
	c := connect(t, s.URL())
	mustCall(t, c, "echo", map[string]any{"text": "back"}, "back")
	s.Close()
	s.Close()
	if err := s.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestStopCancelsInFlight(t *testing.T) {
	s := startServer(t, Config{Era: StatelessEra})
	c := connect(t, s.URL())
	done := make(chan error, 1)
	go func() {
		_, err := callTool(testCtx(t), c, "slow", map[string]any{"ms": 10000})
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Second)
	for s.ToolRuns("slow") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	s.Stop()
	if time.Since(start) > time.Second {
		t.Fatalf("Stop took %v", time.Since(start))
	}
	err := <-done
	t.Logf("in-flight call during Stop: %s", describe(err))
	if err == nil {
		t.Fatal("in-flight call succeeded")
	}
}

func TestUpdateResource(t *testing.T) {
	t.Run("SessionEra", func(t *testing.T) {
		s := startServer(t, Config{Era: SessionEra})
		//lint:ignore SA1019 the session era's GET stream is what is tested
		c := connect(t, s.URL(), transport.WithContinuousListening())
		got := make(chan mcp.JSONRPCNotification, 16)
		c.OnNotification(func(n mcp.JSONRPCNotification) { got <- n })
		//lint:ignore SA1019 the session era's resources/subscribe is what is tested
		if err := c.Subscribe(testCtx(t), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: CounterURI}}); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		waitUpdate(t, s, got)
		restartQuickly(t, s) // with the GET stream open
	})
	t.Run("StatelessEra", func(t *testing.T) {
		s := startServer(t, Config{Era: StatelessEra})
		c := connect(t, s.URL())
		got := make(chan mcp.JSONRPCNotification, 16)
		c.OnNotification(func(n mcp.JSONRPCNotification) { got <- n })
		stop, err := c.ListenAsync(testCtx(t), mcp.SubscriptionFilter{ResourceSubscriptions: []string{CounterURI}}, nil)
		if err != nil {
			t.Fatalf("ListenAsync: %v", err)
		}
		defer stop()
		waitUpdate(t, s, got)
		restartQuickly(t, s) // with the subscriptions/listen stream open
	})
}

func restartQuickly(t *testing.T, s *Server) {
	t.Helper()
	start := time.Now()
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Restart with an open stream took %v", d)
	}
}

// waitUpdate repeats UpdateResource until a notification arrives, because
// the subscription is established asynchronously (GET stream or listen).
func waitUpdate(t *testing.T, s *Server, got <-chan mcp.JSONRPCNotification) {
	t.Helper()
	for range 100 {
		s.UpdateResource(CounterURI)
		if n, ok := nextUpdate(got, 20*time.Millisecond); ok {
			if uri := n.Params.AdditionalFields["uri"]; uri != CounterURI {
				t.Fatalf("uri = %v", uri)
			}
			return
		}
	}
	t.Fatal("no notifications/resources/updated received")
}

func nextUpdate(got <-chan mcp.JSONRPCNotification, wait time.Duration) (mcp.JSONRPCNotification, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case n := <-got:
			if n.Method == mcp.MethodNotificationResourceUpdated {
				return n, true
			}
		case <-timer.C:
			return mcp.JSONRPCNotification{}, false
		}
	}
}

func TestStallSessionHoldsOnlyThatSession(t *testing.T) {
	srv, err := Start(Config{Era: SessionEra})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	stuck, ok := connect(t, srv.URL()), connect(t, srv.URL())
	ids := srv.SessionIDs()
	if len(ids) != 2 {
		t.Fatalf("SessionIDs = %v, want 2", ids)
	}
	srv.StallSession(ids[0])
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	//lint:ignore SA1019 the session era's ping is what is tested
	if err := stuck.Ping(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ping on the stalled session = %v, want the deadline", err)
	}
	//lint:ignore SA1019 the session era's ping is what is tested
	if err := ok.Ping(context.Background()); err != nil {
		t.Errorf("ping on the other session = %v", err)
	}
}
