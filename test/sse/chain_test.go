package sse_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
)

// countingObserver counts the calls an observer is told of the end of,
// and their attempts' HTTP requests.
type countingObserver struct{ calls atomic.Int64 }

func (o *countingObserver) StartCall(ctx context.Context, _ observe.CallInfo) context.Context {
	return ctx
}
func (o *countingObserver) StartAttempt(ctx context.Context, _ observe.AttemptInfo) context.Context {
	return ctx
}
func (o *countingObserver) EndAttempt(context.Context, observe.AttemptEnd) {}
func (o *countingObserver) EndCall(context.Context, observe.CallEnd)       { o.calls.Add(1) }
func (o *countingObserver) HandleEvent(observe.Server, observe.Event)      {}

// TestSSEChainApplies: the stream's GET and every POST go through the
// client's one HTTP chain: the bearer token and WithHeaders on each, the
// transport wrapper under each, the observers told of each call; a pool
// of two is two streams, each its own session.
func TestSSEChainApplies(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{} // "GET ok", "POST ok", or what was missing
	sessions := map[string]bool{}
	url := scriptedSSEInspecting(t, func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Header.Get("Authorization") != "Bearer t0k":
			seen[r.Method+" without the token"]++
		case r.Header.Get("X-Tenant") != "acme":
			seen[r.Method+" without the header"]++
		default:
			seen[r.Method+" ok"]++
		}
		if r.Method == http.MethodGet {
			sessions[fmt.Sprint(len(sessions))] = true
		}
	}, func(method, id, result string) []string {
		return []string{fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)}
	})
	var wrapped atomic.Int64
	obs := &countingObserver{}
	c, err := client.NewSSE(url,
		client.WithBearerToken(func(context.Context, string) (string, error) { return "t0k", nil }),
		client.WithHeaders(map[string]string{"X-Tenant": "acme"}),
		client.WithTransportWrapper(func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				wrapped.Add(1)
				return next.RoundTrip(r)
			})
		}),
		client.WithObserver(obs),
		client.WithPoolSize(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 10 {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		if _, err := c.CallTool(ctx, req); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen["GET ok"] == 0 || seen["POST ok"] == 0 {
		t.Errorf("requests seen by the server: %v; want every GET and POST with the token and the header", seen)
	}
	if len(sessions) != 2 {
		t.Errorf("%d streams for a pool of 2", len(sessions))
	}
	if n := wrapped.Load(); n < int64(seen["GET ok"]+seen["POST ok"]) {
		t.Errorf("the transport wrapper saw %d requests of %d", n, seen["GET ok"]+seen["POST ok"])
	}
	if n := obs.calls.Load(); n < 10 {
		t.Errorf("the observer was told of %d calls, want 10", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
