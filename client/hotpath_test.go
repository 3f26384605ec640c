package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// callRecorder records the tools/call POSTs that go through it.
type callRecorder struct {
	mu     sync.Mutex
	calls  []*http.Request
	bodies [][]byte
}

func (r *callRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			r.mu.Lock()
			r.calls, r.bodies = append(r.calls, req), append(r.bodies, body)
			r.mu.Unlock()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (r *callRecorder) last(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		t.Fatal("no tools/call was sent")
	}
	return r.calls[len(r.calls)-1], r.bodies[len(r.bodies)-1]
}

var jsonrpcID = regexp.MustCompile(`"id":[0-9]+`)

// TestHotPathWritesWhatMCPGoWrites: a tools/call the client writes itself
// is raw mcp-go's on the wire, its id aside (params, _meta, the headers
// of the era), and its answer is read as mcp-go reads it, with no
// fallback to mcp-go's parser. Broken (the stateless era's _meta left
// out, or a content item read wrongly), it fails.
func TestHotPathWritesWhatMCPGoWrites(t *testing.T) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		t.Run(era.String(), func(t *testing.T) {
			srv := startServer(t, testserver.Config{Era: era})
			ctx := testContext(t)
			var rawRec, ourRec callRecorder
			raw, err := mcpclient.NewStreamableHttpClient(srv.URL(), transport.WithHTTPBasicClient(&http.Client{Transport: &rawRec}))
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if err := raw.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "hot", Version: "1"}}}
			if _, err := raw.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			c := newClient(t, srv.URL(), WithHTTPClient(&http.Client{Transport: &ourRec}))
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			for _, req := range []mcp.CallToolRequest{
				hotCall("echo", map[string]any{"text": "<a href=\"x\">é 日本 😀\n</a>"}),
				hotCall("add", map[string]any{"a": 1, "b": 2.5}),
				hotCall("echo", nil),
				hotCall("echo", map[string]any(nil)),
			} {
				want, wantErr := raw.CallTool(ctx, req)
				got, gotErr := c.CallTool(ctx, req)
				if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: got %#v, %v; mcp-go %#v, %v", req.Params.Name, got, gotErr, want, wantErr)
				}
				rawReq, rawBody := rawRec.last(t)
				ourReq, ourBody := ourRec.last(t)
				if a, b := jsonrpcID.ReplaceAll(rawBody, []byte(`"id":0`)), jsonrpcID.ReplaceAll(ourBody, []byte(`"id":0`)); !bytes.Equal(a, b) {
					t.Errorf("%s: sent\n%s\nmcp-go sends\n%s", req.Params.Name, b, a)
				}
				for _, h := range []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name"} {
					if got, want := ourReq.Header.Values(h), rawReq.Header.Values(h); !reflect.DeepEqual(got, want) {
						t.Errorf("%s: header %s is %q; mcp-go sends %q", req.Params.Name, h, got, want)
					}
				}
				if (ourReq.Header.Get("Mcp-Session-Id") == "") != (rawReq.Header.Get("Mcp-Session-Id") == "") {
					t.Errorf("%s: Mcp-Session-Id %q; mcp-go sends %q", req.Params.Name, ourReq.Header.Get("Mcp-Session-Id"), rawReq.Header.Get("Mcp-Session-Id"))
				}
			}
			if n := c.Stats().ParserFallbacks; n != 0 {
				t.Errorf("ParserFallbacks = %d; want 0: every answer was the decoder's", n)
			}
		})
	}
}

// hotCall is a tools/call with arguments of any type, nil included.
func hotCall(name string, args any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	return req
}

// TestHotPathFallsBackToMCPGo: an answer the client's reader does not
// recognise (a tool_use content item) is read by mcp-go's parser, as it
// always was, and counted in Stats.ParserFallbacks.
func TestHotPathFallsBackToMCPGo(t *testing.T) {
	m := server.NewMCPServer("odd", "1")
	odd := &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent("before"),
		mcp.NewToolUseContent("u1", "search", map[string]any{"q": "x"}),
	}}
	m.AddTool(mcp.NewTool("odd"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return odd, nil })
	m.AddTool(mcp.NewTool("plain"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("plain"), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(m))
	defer ts.Close()
	ctx := testContext(t)
	c := newClient(t, ts.URL)
	res, err := c.CallTool(ctx, hotCall("odd", nil))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(odd)
	raw := json.RawMessage(data)
	want, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		t.Fatal(err)
	}
	want.ResultType = res.ResultType // the server's era sets it, or not
	if !reflect.DeepEqual(res.Content, want.Content) {
		t.Errorf("got %#v; want %#v", res.Content, want.Content)
	}
	if _, err := c.CallTool(ctx, hotCall("plain", nil)); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().ParserFallbacks; n != 1 {
		t.Errorf("ParserFallbacks = %d; want 1", n)
	}
}
