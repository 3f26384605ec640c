package realservers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/fastmcp"
	"github.com/resilientmcp/resilientmcp/test/internal/gosdkserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// recordAnswersEnv names a directory: TestToolAnswersAsMCPGoReadsThem then
// writes there the result of every answer it compares, as the server sent
// it, for client/internal/toolcall's testdata/answers (the decoder's
// equivalence with mcp-go's parser is held to them without the servers).
const recordAnswersEnv = "RESILIENTMCP_RECORD_ANSWERS"

// toolCalls are the tools/calls of each real server whose answers are
// compared: every kind of content the servers give (text, an image, an
// embedded resource, resource links, structuredContent, annotations,
// isError).
var toolCalls = map[string][]mcp.CallToolRequest{
	"gosdk": {
		rig.ToolRequest("echo", map[string]any{"text": "héllo <wörld> \"quoted\"\n"}),
		rig.ToolRequest("increment", map[string]any{"id": "record"}),
		rig.ToolRequest("echo", map[string]any{"text": 5}), // refused by the schema: isError
	},
	"mcpgo": {
		rig.ToolRequest("echo", map[string]any{"text": "héllo <wörld> \"quoted\"\n"}),
		rig.ToolRequest("add", map[string]any{"a": 1, "b": "x"}), // a tool's error: isError
		rig.ToolRequest("add", map[string]any{"a": 1, "b": 2.5}),
	},
	"mcpgo-stateless": {
		rig.ToolRequest("echo", map[string]any{"text": "x"}),
		rig.ToolRequest("add", map[string]any{"a": 1, "b": "x"}),
	},
	"everything": {
		rig.ToolRequest("echo", map[string]any{"message": "héllo <wörld>"}),
		rig.ToolRequest("get-sum", map[string]any{"a": 1, "b": 2}),
		rig.ToolRequest("get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}),
		rig.ToolRequest("get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1}),
		rig.ToolRequest("get-resource-reference", map[string]any{"resourceType": "Blob", "resourceId": 2}),
		rig.ToolRequest("get-resource-links", map[string]any{"count": 3}),
		rig.ToolRequest("get-structured-content", map[string]any{"location": "New York"}),
	},
	"fastmcp": {
		rig.ToolRequest("mark", map[string]any{}),
	},
}

// TestToolAnswersAsMCPGoReadsThem: the answers of go-sdk's server, mcp-go's
// (both eras), server-everything and FastMCP to each kind of tools/call are what raw mcp-go
// reads from them: the ResilientClient reads JSON answers itself (the hot
// path, issue 46; go-sdk and server-everything answer with event streams,
// which mcp-go reads), so any difference is its reader's. Also a recorder of those
// answers (recordAnswersEnv).
func TestToolAnswersAsMCPGoReadsThem(t *testing.T) {
	servers := map[string]func(t *testing.T) string{
		"gosdk": func(t *testing.T) string { return rig.StartGoSDK(t, gosdkserver.Config{}).URL() },
		"mcpgo": func(t *testing.T) string {
			srv, err := testserver.Start(testserver.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			return srv.URL()
		},
		"mcpgo-stateless": func(t *testing.T) string {
			srv, err := testserver.Start(testserver.Config{Era: testserver.StatelessEra})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			return srv.URL()
		},
		"everything": func(t *testing.T) string { return rig.StartEverything(t).URL() },
		"fastmcp":    startFastMCP,
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			url := start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var rec answerRecorder
			raw, err := mcpclient.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(&http.Client{Transport: &rec}))
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if err := raw.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := rig.BenchInit()
			if name == "gosdk" {
				// Its server speaks the session era only, which raw
				// mcp-go's Initialize does not fall back to by itself.
				init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
			}
			if _, err := raw.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			c, err := client.New(url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i, req := range toolCalls[name] {
				want, wantErr := raw.CallTool(ctx, req)
				got, gotErr := c.CallTool(ctx, req)
				if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %#v, %v; raw mcp-go read %#v, %v", req.Params.Name, got, gotErr, want, wantErr)
				}
				if wantErr != nil {
					t.Logf("%s: raw mcp-go: %v", req.Params.Name, wantErr)
				}
				if dir := os.Getenv(recordAnswersEnv); dir != "" && wantErr == nil {
					rec.record(t, filepath.Join(dir, fmt.Sprintf("%s-%d-%s.json", name, i, req.Params.Name)))
				}
			}
			if n := c.Stats().ParserFallbacks; n != 0 {
				t.Logf("%d answers left to mcp-go's parser", n)
			}
		})
	}
}

// answerRecorder keeps the body of the last answer to a tools/call.
type answerRecorder struct {
	mu   sync.Mutex
	last []byte
}

func (r *answerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.last = body
	r.mu.Unlock()
	return resp, nil
}

// record writes the result of the last answer r saw, as the server sent
// it: the body's, or the last event's data on an event stream.
func (r *answerRecorder) record(t *testing.T, path string) {
	r.mu.Lock()
	body := r.last
	r.mu.Unlock()
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			body = []byte(data)
		}
	}
	var msg struct{ Result json.RawMessage }
	if err := json.Unmarshal(body, &msg); err != nil || msg.Result == nil {
		t.Fatalf("recording %s: %s: %v", path, body, err)
	}
	if err := os.WriteFile(path, msg.Result, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startFastMCP runs the FastMCP server of test/internal/fastmcp (stateless
// mode: no session id) on a free port, killed when the test ends; the test
// skips where node or the pinned package is missing.
func startFastMCP(t *testing.T) string {
	if err := fastmcp.Installed(); err != nil {
		t.Skipf("FastMCP: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	name, args := fastmcp.Command()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "PORT="+port, "SERVER_NAME=fastmcp", "PROMPT=p", "RESOURCE=mem://r",
		"RUNS_FILE="+filepath.Join(t.TempDir(), "runs"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for range 200 { // 10 s
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return "http://" + addr + "/mcp"
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("FastMCP did not listen within 10s")
	return ""
}
