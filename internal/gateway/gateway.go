// Package gateway is an MCP gateway for end-to-end tests: a Streamable
// HTTP front on 127.0.0.1 that forwards to the server behind it, as the
// gateways deployments put in front of stdio servers do, and that answers
// as they do while their child process restarts: every JSON-RPC request
// gets the error -32603 (internal error), since no process is there to
// answer it.
package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// Gateway forwards every request to its upstream, but for the requests that
// arrive while its child restarts (ChildRestarts). It is safe for
// concurrent use.
type Gateway struct {
	addr     string
	srv      *http.Server
	upstream *http.Transport
	proxy    *httputil.ReverseProxy
	served   chan struct{}

	mu      sync.Mutex       // guards the fields below
	until   time.Time        // the child restarts until then
	refused map[string]int64 // requests answered -32603, by method
}

// Start listens on 127.0.0.1 on a free port and forwards to upstream, the
// MCP endpoint behind ("http://127.0.0.1:PORT/mcp"); the gateway's own
// endpoint is URL.
func Start(upstream string) (*Gateway, error) {
	target, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gateway: listen: %w", err)
	}
	g := &Gateway{
		addr:     ln.Addr().String(),
		upstream: &http.Transport{MaxIdleConnsPerHost: 64},
		served:   make(chan struct{}),
		refused:  map[string]int64{},
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = target.Path
			r.Out.Host = target.Host
		},
		Transport:     g.upstream,
		FlushInterval: -1,                         // event streams go through as they come
		ErrorLog:      log.New(io.Discard, "", 0), // a stream Close cuts is no news
	}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(g.served)
		_ = g.srv.Serve(ln)
	}()
	return g, nil
}

// URL returns the gateway's MCP endpoint.
func (g *Gateway) URL() string { return "http://" + g.addr + "/mcp" }

// ChildRestarts has the gateway's child process restart for d from now:
// until then every JSON-RPC request is answered with -32603 and reaches
// no server, notifications and responses are accepted and dropped; the
// event stream (GET) and DELETE are forwarded.
func (g *Gateway) ChildRestarts(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.until = time.Now().Add(d)
}

// Restarting reports whether the child is restarting now.
func (g *Gateway) Restarting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Now().Before(g.until)
}

// Refused is how many requests of method the gateway answered with -32603;
// of any method if method is "".
func (g *Gateway) Refused(method string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if method != "" {
		return g.refused[method]
	}
	var n int64
	for _, m := range g.refused {
		n += m
	}
	return n
}

// Close stops the gateway, cutting the requests in flight, and waits for
// it.
func (g *Gateway) Close() {
	_ = g.srv.Close()
	<-g.served
	g.upstream.CloseIdleConnections()
}

// maxBody bounds the body the gateway reads while its child restarts; test
// requests are small.
const maxBody = 1 << 20

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !g.Restarting() {
		g.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(body), &msg); err != nil && !errors.Is(err, io.EOF) {
		http.Error(w, "not a JSON-RPC message", http.StatusBadRequest)
		return
	}
	if msg.Method == "" || len(msg.ID) == 0 || string(msg.ID) == "null" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	g.mu.Lock()
	g.refused[msg.Method]++
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32603,"message":"Internal server error"}}`)
}
