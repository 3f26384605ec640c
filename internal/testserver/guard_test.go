package testserver

import (
	"net/http"
	"sync/atomic"
	"testing"
)

// TestGuard checks that a Guard sees every request, that what it refuses
// is not counted, and that it is applied again after a restart.
func TestGuard(t *testing.T) {
	s := startServer(t, Config{Era: SessionEra})
	var seen atomic.Int64
	guard := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			if r.Header.Get("X-Pass") == "" {
				http.Error(w, "guarded", http.StatusTeapot)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	s.Reconfigure(Config{Era: SessionEra, Guard: guard})
	for round := range 2 {
		if err := s.Restart(); err != nil {
			t.Fatalf("Restart: %v", err)
		}
		if resp, _ := rawPost(t, s.URL(), "", initBody, nil); resp.StatusCode != http.StatusTeapot {
			t.Fatalf("round %d: unguarded initialize: %d, want 418", round, resp.StatusCode)
		}
		if resp, body := rawPost(t, s.URL(), "", initBody, map[string]string{"X-Pass": "1"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("round %d: guarded initialize: %d %s", round, resp.StatusCode, body)
		}
		if got, want := s.RPCs("initialize"), int64(round+1); got != want {
			t.Errorf("round %d: RPCs(initialize) = %d, want %d (refused requests are not counted)", round, got, want)
		}
	}
	if got := s.HTTPRequests(http.MethodPost); got != 2 {
		t.Errorf("HTTPRequests(POST) = %d, want 2", got)
	}
	if got := seen.Load(); got != 4 {
		t.Errorf("guard saw %d requests, want 4", got)
	}
}
