package sse_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSSEUnknownSessionAnswers records what each server answers to a POST
// on a session it does not know, as a restarted server meets the session
// of a client that did not notice its restart: the endpoint of a stream
// opened before a SIGKILL, POSTed to after the new process listens.
//
//   - mcp-go's SSE server: 400 with a JSON-RPC error (-32602 "Invalid
//     session ID");
//   - go-sdk's SSE handler: 404 "session not found";
//   - server-everything's SSE mode (the TypeScript SDK's SSEServerTransport
//     under express): nothing at all. Its POST handler logs "No transport
//     found" and never answers, so the POST hangs;
//   - supergateway 4.0.0: 503 "No active SSE connection for session …";
//   - FastMCP 4.20.16 (mcp-proxy's SSE handler): a plain-text 400 "No
//     active transport".
//
// The client reads the first two, and FastMCP's, as an expired session (a 404, or a 400
// on a session that has served: policy.Session.SessionInURL); the third
// it never meets, since it sends nothing on an endpoint whose stream has
// ended, and a POST in flight when the stream ends is given up; the
// fourth, supergateway's 503, it reads as busy (not sent, retried by the
// backoff), which is so: supergateway forgets a session only when its
// stream ends, and the stream's end has replaced the session by then.
func TestSSEUnknownSessionAnswers(t *testing.T) {
	want := map[string]struct {
		status int
		body   string
	}{
		"mcpgo":        {http.StatusBadRequest, "Invalid session ID"},
		"gosdk":        {http.StatusNotFound, "session not found"},
		"everything":   {0, ""},
		"supergateway": {http.StatusServiceUnavailable, "No active SSE connection for session"},
		"fastmcp":      {http.StatusBadRequest, "No active transport"},
	}
	for _, kind := range []string{"mcpgo", "gosdk", "everything", "supergateway", "fastmcp"} {
		t.Run(kind, func(t *testing.T) {
			p := startProcess(t, kind)
			endpoint := endpointOf(t, p.URL())
			p.restart()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			status, answer := 0, ""
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status, answer = resp.StatusCode, strings.TrimSpace(string(b))
			} else if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("POST: %v", err)
			}
			t.Logf("%s answers a POST on an unknown session: status %d, body %q (err %v)", kind, status, answer, err)
			w := want[kind]
			if status != w.status || !strings.Contains(answer, w.body) {
				t.Errorf("got status %d, body %q; want %d, %q", status, answer, w.status, w.body)
			}
			http.DefaultClient.CloseIdleConnections()
		})
	}
}

// endpointOf opens a stream at streamURL, reads its endpoint event, and
// closes it.
func endpointOf(t *testing.T, streamURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, streamURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no endpoint event: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if v, ok := strings.CutPrefix(line, "event:"); ok {
			event = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok && event == "endpoint" {
			base, _ := url.Parse(streamURL)
			ep, err := base.Parse(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return ep.String()
		}
	}
}
