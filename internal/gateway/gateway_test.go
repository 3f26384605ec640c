package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends one JSON-RPC message to the gateway, as a client would.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The gateway forwards; while its child restarts it answers every request
// -32603 under the request's id, reaching no server, accepts notifications
// and drops them; then it forwards again.
func TestChildRestarts(t *testing.T) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	g, err := Start(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	defer http.DefaultClient.CloseIdleConnections()
	initialize := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

	if status, body := post(t, g.URL(), initialize); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("forwarded initialize: %d %s", status, body)
	}
	g.ChildRestarts(time.Hour)
	if status, body := post(t, g.URL(), initialize); status != http.StatusOK || !strings.Contains(body, `"id":7`) || !strings.Contains(body, `"code":-32603`) {
		t.Errorf("initialize while the child restarts: %d %s; want -32603 for id 7", status, body)
	}
	if status, _ := post(t, g.URL(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); status != http.StatusAccepted {
		t.Errorf("a notification while the child restarts: %d, want 202", status)
	}
	if n, all := g.Refused("initialize"), g.Refused(""); n != 1 || all != 1 {
		t.Errorf("refused %d initialize, %d in all; want 1 and 1", n, all)
	}
	if n := srv.RPCs("initialize"); n != 1 {
		t.Errorf("the server got %d initialize, want 1: none while the child restarts", n)
	}
	g.ChildRestarts(0)
	if status, body := post(t, g.URL(), initialize); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("initialize once the child is back: %d %s", status, body)
	}
}
