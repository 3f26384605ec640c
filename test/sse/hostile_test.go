package sse_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// countingListener is "another host": a listener on another port of
// 127.0.0.1 that counts the connections made to it and answers none.
func countingListener(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), &n
}

// hostileStream serves an event stream whose endpoint event is endpoint
// (its "SELF" replaced with the server's own address), then holds the
// stream open until the client goes.
func hostileStream(t *testing.T, endpoint string) (streamURL string, posts *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	posts = new(atomic.Int64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", strings.ReplaceAll(endpoint, "SELF", ln.Addr().String()))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/sse", posts
}

// TestSSEHostileEndpoint: an endpoint event naming another origin (another
// port, another host name, another scheme, credentials in the URL) is
// refused: the call fails at once with ErrUnavailable, and no request
// reaches the host it names, nor the stream's own server.
func TestSSEHostileEndpoint(t *testing.T) {
	other, reached := countingListener(t)
	cases := map[string]string{
		"another port":      "http://" + other + "/message?sessionId=x",
		"another host":      "http://localhost:" + strings.Split(other, ":")[1] + "/message?sessionId=x",
		"another scheme":    "https://SELF/message?sessionId=x",
		"protocol-relative": "//" + other + "/message",
		"userinfo":          "http://evil@SELF/message",
		"not a URL":         "http://SELF/%zz",
	}
	for name, endpoint := range cases {
		t.Run(name, func(t *testing.T) {
			streamURL, posts := hostileStream(t, endpoint)
			c, err := client.NewSSE(streamURL)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err = c.ListTools(ctx, mcp.ListToolsRequest{})
			if !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("ListTools: %v, want ErrUnavailable", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("refused after %v: want at once", took)
			}
			if !strings.Contains(err.Error(), "endpoint event") {
				t.Errorf("the error does not say why: %v", err)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("%d connections reached the host the endpoint named", n)
			}
			if n := posts.Load(); n != 0 {
				t.Errorf("%d POSTs reached the stream's server", n)
			}
			t.Logf("%s: %v", name, err)
		})
	}
}

// TestSSESameOriginAbsoluteEndpoint: an endpoint given as an absolute URL
// on the stream's origin is taken (the origin check refuses only others).
func TestSSESameOriginAbsoluteEndpoint(t *testing.T) {
	streamURL, posts := hostileStream(t, "http://SELF/message?sessionId=x")
	c, err := client.NewSSE(streamURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, _ = c.ListTools(ctx, mcp.ListToolsRequest{}) // the server never answers
	if posts.Load() == 0 {
		t.Error("no POST reached the endpoint on the stream's origin")
	}
}
