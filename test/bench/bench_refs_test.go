package bench

// The two references BenchmarkCallLatency and BenchmarkThroughput measure
// next to raw mcp-go: the official Go SDK's client, and plain net/http
// posting the bytes raw mcp-go posts (the floor: what any client pays for
// the HTTP exchange and the server's work alone).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// callFunc is a client's CallTool, as every client in the benchmarks is
// called.
type callFunc func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)

// goSDKClient connects the official Go SDK's client to url over hc (nil:
// http.DefaultClient, as users have it) and returns its CallTool. Like
// rig.BenchInit it calls itself "bench" "0", so that in the stateless era, where
// the client info goes with every request, its requests are as big as raw
// mcp-go's.
//
// The SDK takes *CallToolParams and, in the stateless era, writes its
// per-request _meta into them, so each call builds its own (as a caller of
// the SDK does): one allocation that is the SDK's to count.
func goSDKClient(b *testing.B, url string, hc *http.Client) callFunc {
	b.Helper()
	c := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "bench", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdkmcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	call := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := cs.CallTool(ctx, &sdkmcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		return nil, err
	}
	// Once, outside the measurement: the echo comes back.
	res, err := cs.CallTool(context.Background(), &sdkmcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 {
		b.Fatalf("go-sdk: echo answered %+v", res)
	}
	if text, ok := res.Content[0].(*sdkmcp.TextContent); !ok || text.Text != "x" {
		b.Fatalf("go-sdk: echo answered %+v", res.Content[0])
	}
	return call
}

// netHTTPFloor returns a call that POSTs, through hc, the bytes raw mcp-go
// posts for an echo call to url, with the headers it sends, and reads and
// discards the answer. The request is recorded from a raw mcp-go client of
// its own (it stays open, so in the session era its session stays valid)
// and replayed as is, including its JSON-RPC id and, in the stateless era,
// the request's _meta: the server does not check that ids are unique, and
// a floor does no bookkeeping. The request argument is ignored.
func netHTTPFloor(b *testing.B, url string, hc *http.Client) callFunc {
	b.Helper()
	rec := &requestRecorder{next: http.DefaultTransport}
	raw := rig.RawClient(b, url, transport.WithHTTPBasicClient(&http.Client{Transport: rec}))
	if _, err := raw.CallTool(context.Background(), rig.ToolRequest("echo", map[string]any{"text": "x"})); err != nil {
		b.Fatal(err)
	}
	body, header := rec.toolsCall()
	if body == nil {
		b.Fatal("recorded no tools/call request")
	}
	call := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		// Shared by every request, read only: net/http does not write to
		// a request's header.
		req.Header = header
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("HTTP %s", resp.Status)
		}
		return nil, nil
	}
	// Once, outside the measurement: the replayed call is answered with the
	// echo, not an error.
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header = header
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"result"`) || !strings.Contains(string(answer), `"text":"x"`) {
		b.Fatalf("replayed tools/call: HTTP %d %s (%v)", resp.StatusCode, answer, err)
	}
	return call
}

// requestRecorder is a RoundTripper that keeps the body and headers of the last
// tools/call POST it carried.
type requestRecorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	body   []byte
	header http.Header
}

func (r *requestRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil {
		return r.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
		r.mu.Lock()
		r.body, r.header = body, req.Header.Clone()
		r.mu.Unlock()
	}
	// A RoundTripper must not change the request: send a copy with the
	// body restored.
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	return r.next.RoundTrip(out)
}

func (r *requestRecorder) toolsCall() ([]byte, http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body, r.header
}
