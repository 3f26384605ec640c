package client

import (
	"net/http"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// WithHeaders' headers are on every request the client sends, the
// session's DELETE at Close among them, which mcp-go v1.2.1 builds without
// them: a server (or gateway) that wants its header on every request sees
// it on each.
func TestHeadersOnEveryRequest(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // method → X-Tenant values
	srv := startServer(t, testserver.Config{Era: testserver.SessionEra, Guard: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.Method] = append(seen[r.Method], r.Header.Get("X-Tenant"))
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}})
	c, err := New(srv.URL(), WithKeepAlive(0), WithHeaders(map[string]string{"X-Tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen[http.MethodDelete]) == 0 {
		t.Fatalf("no DELETE at Close: %v", seen)
	}
	for method, values := range seen {
		for _, v := range values {
			if v != "acme" {
				t.Errorf("a %s without the header: %v", method, seen)
			}
		}
	}
}
