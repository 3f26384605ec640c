package wire

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Renew leaves the Transport alone while a request is being handed to it,
// and otherwise exchanges it for a fresh one and closes the old one's idle
// connections: the next request dials.
func TestRenewable(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	r := NewRenewable(func() *http.Transport { return &http.Transport{} })
	defer r.CloseIdleConnections()
	c := &http.Client{Transport: r}
	get := func(path string) error {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}

	if err := get("/"); err != nil {
		t.Fatal(err)
	}
	first := r.Transport()
	done := make(chan error, 1)
	go func() { done <- get("/slow") }()
	<-arrived
	if r.Renew() || r.Transport() != first {
		t.Fatal("renewed while a request waited for its answer's headers")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := conns.Load(); got != 1 {
		t.Fatalf("%d connections before renewing, want the one, reused", got)
	}
	if !r.Renew() || r.Transport() == first {
		t.Fatal("not renewed with no request under way")
	}
	if err := get("/"); err != nil {
		t.Fatal(err)
	}
	if got := conns.Load(); got != 2 {
		t.Fatalf("%d connections after renewing, want a second: the request went on the old one", got)
	}
}

// A renewed Renewable holds no Transport until a request needs one: an
// idle client keeps none (BenchmarkIdleClients). The request that needs
// one makes it, once.
func TestRenewableMakesTheNextTransportWhenARequestNeedsIt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	var made atomic.Int32
	r := NewRenewable(func() *http.Transport {
		made.Add(1)
		return &http.Transport{}
	})
	defer r.CloseIdleConnections()
	c := &http.Client{Transport: r}
	get := func() {
		t.Helper()
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}

	get()
	for range 2 {
		if !r.Renew() {
			t.Fatal("not renewed with no request under way")
		}
	}
	r.CloseIdleConnections() // nothing to close
	if got := made.Load(); got != 1 {
		t.Fatalf("%d Transports made by the first request and two renewals, want 1", got)
	}
	r.mu.RLock()
	held := r.cur
	r.mu.RUnlock()
	if held != nil {
		t.Fatal("a renewed Renewable holds a Transport before any request needs it")
	}
	get()
	get()
	if got := made.Load(); got != 2 {
		t.Fatalf("%d Transports made, want a second for the requests after renewing", got)
	}
}
