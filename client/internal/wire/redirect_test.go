package wire

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A redirect to another port of the same host keeps what describes the
// request and drops everything else; Go's own policy would keep it all.
func TestRedirectToAnotherOriginDropsCredentials(t *testing.T) {
	got := make(chan http.Header, 1)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer other.Close()
	origin := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	defer origin.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: &Tracker{next: tr}}
	req, _ := http.NewRequest(http.MethodPost, origin.URL+"/mcp", strings.NewReader(`{}`))
	for k, v := range map[string]string{
		"Authorization": "Bearer secret", "X-Api-Key": "secret", "Cookie": "a=secret", "Mcp-Session-Id": "s",
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25",
	} {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	for _, k := range []string{"Authorization", "X-Api-Key", "Cookie", "Mcp-Session-Id"} {
		if v := h.Get(k); v != "" {
			t.Errorf("%s: %q reached another origin", k, v)
		}
	}
	for _, k := range []string{"Content-Type", "Accept", "Mcp-Protocol-Version"} {
		if h.Get(k) == "" {
			t.Errorf("%s was dropped", k)
		}
	}
}
