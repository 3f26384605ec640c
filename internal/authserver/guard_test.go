package authserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"guard-test","version":"1"}}}`

// startGuarded starts a testserver whose every generation is guarded by
// as.Protect. Protect must name the MCP URL, which only exists once Start
// has picked the port: start unguarded, then Reconfigure and Restart.
func startGuarded(t *testing.T, as *authserver.Server) *testserver.Server {
	t.Helper()
	ts, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		t.Fatalf("testserver.Start: %v", err)
	}
	t.Cleanup(ts.Close)
	ts.Reconfigure(testserver.Config{
		Era:   testserver.SessionEra,
		Guard: func(next http.Handler) http.Handler { return as.Protect(ts.URL(), next) },
	})
	if err := ts.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	return ts
}

func (r *rig) initialize(t *testing.T, mcpURL, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, _ := r.do(t, req)
	return resp
}

func TestGuardedTestServer(t *testing.T) {
	r := newRig(t, authserver.Config{})
	ts := startGuarded(t, r.as)
	prmURL := "http://" + ts.Addr() + "/.well-known/oauth-protected-resource/mcp"

	resp := r.initialize(t, ts.URL(), "")
	wantStatus(t, "initialize without token", resp, http.StatusUnauthorized)
	if got, want := resp.Header.Get("WWW-Authenticate"), `Bearer resource_metadata="`+prmURL+`"`; got != want {
		t.Errorf("WWW-Authenticate = %q, want %q", got, want)
	}
	resp, body := r.get(t, prmURL)
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &prm) != nil ||
		prm.Resource != ts.URL() || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != r.as.URL() {
		t.Fatalf("GET %s: %d %s", prmURL, resp.StatusCode, body)
	}

	// A token is bound to its resource: the rig's is no good here.
	other, _ := r.login(t, "", r.resource)
	wantStatus(t, "token for another resource", r.initialize(t, ts.URL(), other.AccessToken), http.StatusUnauthorized)

	tok, _ := r.login(t, "", ts.URL())
	wantStatus(t, "initialize with token", r.initialize(t, ts.URL(), tok.AccessToken), http.StatusOK)
	if n := ts.RPCs("initialize"); n != 1 {
		t.Errorf("RPCs(initialize) = %d, want 1: refused requests must not reach the MCP server", n)
	}

	if err := ts.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	// The restart closed the pooled connection, and net/http does not
	// retry a POST on it; this test is about the guard, not about that.
	r.hc.CloseIdleConnections()
	wantStatus(t, "initialize without token after Restart", r.initialize(t, ts.URL(), ""), http.StatusUnauthorized)
	wantStatus(t, "initialize with token after Restart", r.initialize(t, ts.URL(), tok.AccessToken), http.StatusOK)
	if n := ts.RPCs("initialize"); n != 2 {
		t.Errorf("RPCs(initialize) = %d, want 2", n)
	}
	if n := r.as.Stats().Refused401; n != 3 {
		t.Errorf("Refused401 = %d, want 3", n)
	}
}
