package sse_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
)

// behindProxy starts mcp-go's SSE server as a process, behind a fault
// proxy.
func behindProxy(t *testing.T, kind string) (*sseServer, *faultproxy.Proxy) {
	t.Helper()
	p := startProcess(t, kind)
	proxy, err := faultproxy.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return &sseServer{p: p, url: proxy.URL(p.ssePath)}, proxy
}

// updates counts the notifications/resources/updated a client's handler
// receives, with the time of the last.
type updates struct {
	n    atomic.Int64
	last atomic.Int64 // unix nanoseconds
}

func (u *updates) handler(n mcp.JSONRPCNotification) {
	if n.Method == string(mcp.MethodNotificationResourceUpdated) {
		u.n.Add(1)
		u.last.Store(time.Now().UnixNano())
	}
}

// TestSSECutStreams: the proxy resets every connection, the GET stream
// among them, every 2 s for 30 s (6 s under -short) while 8 goroutines
// call: every safe call succeeds, no unannotated call runs twice, and the
// subscription delivers updates after each cut, with no call made for it.
func TestSSECutStreams(t *testing.T) {
	for _, kind := range []string{"mcpgo", "gosdk"} {
		t.Run(kind, func(t *testing.T) { cutStreams(t, kind) })
	}
}

func cutStreams(t *testing.T, kind string) {
	period, total := 2*time.Second, 30*time.Second
	if testing.Short() {
		// Three cuts: each one the full sequence (a lost stream, a new
		// one, calls resent, the subscription restored), in a fifth of the
		// time.
		total = 6 * time.Second
	}
	s, proxy := behindProxy(t, kind)
	var u updates
	c, err := client.NewSSE(s.url, client.WithKeepAlive(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.OnNotification(u.handler)
	ctx := context.Background()
	if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: counterURI}}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	l := runLoad(t, c, s, stop)
	cuts := int(total / period)
	for i := range cuts {
		time.Sleep(period)
		before := u.n.Load()
		proxy.ResetAll()
		cutAt := time.Now()
		// Updates come every 50 ms on a live session: one after the cut
		// proves the new stream carries the restored subscription.
		deadline := cutAt.Add(period - 100*time.Millisecond)
		for time.Now().Before(deadline) && !(u.n.Load() > before && u.last.Load() > cutAt.Add(10*time.Millisecond).UnixNano()) {
			time.Sleep(10 * time.Millisecond)
		}
		if !(u.last.Load() > cutAt.UnixNano()) {
			t.Errorf("cut %d: no resources/updated within %v of the cut", i+1, period)
		}
	}
	close(stop)
	l.wg.Wait()
	l.check(t, s)
	st := c.Stats()
	t.Logf("%d cuts; Stats: %d calls, %d retries, %d redials, %d re-initializations, %d updates", cuts, st.Calls, st.Retries, st.Redials, st.Reinitializations, u.n.Load())
	if st.Redials+st.Reinitializations < uint64(cuts) {
		t.Errorf("%d new sessions after %d cuts", st.Redials+st.Reinitializations, cuts)
	}
}

// TestSSESilentStream: the proxy holds the stream (and every connection
// open then) open and passes nothing. The keepalive ping, unanswered
// within its timeout, finds it: the session is replaced within 1.5
// keepalive intervals of the silence, and the next call succeeds.
func TestSSESilentStream(t *testing.T) {
	const keepAlive = 2 * time.Second
	s, proxy := behindProxy(t, "mcpgo")
	c, err := client.NewSSE(s.url, client.WithKeepAlive(keepAlive))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	req, want := s.echo("before")
	if res, err := c.CallTool(ctx, req); err != nil || text(res) != want {
		t.Fatalf("before the silence: %v, %v", text(res), err)
	}
	proxy.BlackholeAll()
	silent := time.Now()
	deadline := silent.Add(3 * keepAlive)
	for c.Stats().Redials == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(silent)
	if c.Stats().Redials == 0 {
		t.Fatalf("the silent stream was not replaced within %v", 3*keepAlive)
	}
	// Replaced: the new session initialized. The bound is the probe's
	// schedule (idle for an interval, then half an interval to answer);
	// the dial after it is a round trip on loopback.
	if limit := keepAlive * 3 / 2; took > limit+250*time.Millisecond {
		t.Errorf("the silent stream was replaced after %v, over 1.5 keepalive intervals (%v)", took, limit)
	}
	t.Logf("silence detected and the session replaced after %v (keepalive %v)", took, keepAlive)
	req, want = s.echo("after")
	if res, err := c.CallTool(ctx, req); err != nil || text(res) != want {
		t.Fatalf("after the silence: %v, %v", text(res), err)
	}
}
