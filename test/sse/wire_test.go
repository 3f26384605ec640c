package sse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// samplingAnswer is a sampling handler that answers "sampled: <prompt>".
type samplingAnswer struct{}

func (samplingAnswer) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	prompt := ""
	if len(req.Messages) > 0 {
		if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
			prompt = tc.Text
		}
	}
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled: " + prompt)}, Model: "test"}, nil
}

// TestSSEServerRequests: a request from the server on the stream
// (sampling/createMessage, from server-everything's SSE mode while it runs
// trigger-sampling-request) is read as a request, answered by the
// client's handler, and the tool's answer carries it. mcp-go's own SSE
// transport takes any message with an id for an answer. (mcp-go's SSE
// server cannot send sampling requests: its sessions do not support it.)
func TestSSEServerRequests(t *testing.T) {
	s := startServer(t, "everything")
	c, err := client.NewSSE(s.url, client.WithClientOptions(mcpclient.WithSamplingHandler(samplingAnswer{})))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "trigger-sampling-request", map[string]any{"prompt": "hello"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Content)
	if res.IsError || !strings.Contains(string(b), "sampled: Resource trigger-sampling-request context: hello") {
		t.Fatalf("the tool answered %s (error: %v), want the client's sampling answer", b, res.IsError)
	}
}

// TestSSEAnswersOfOthersDropped: a gateway that sends every client's
// messages to every stream (supergateway's SSE output) delivers, before
// ours, another client's answer with an id such a client counts from: 1,
// 2, 3. It never reaches a call of ours; it is dropped and counted.
func TestSSEAnswersOfOthersDropped(t *testing.T) {
	url := scriptedSSE(t, func(method, id, result string) []string {
		// Another client's answers first, with the ids it counts.
		var out []string
		for n := 1; n <= 3; n++ {
			out = append(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"theirs"}]}}`, n))
		}
		return append(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	})
	c, err := client.NewSSE(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 5 {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := text(res); got != "ours" {
			t.Fatalf("call %d answered %q: another client's answer delivered", i, got)
		}
	}
	if n := c.Stats().WrongAnswers; n < 15 {
		t.Errorf("Stats().WrongAnswers = %d, want the 3 of every request counted", n)
	}
	if id := c.GetSessionId(); !strings.Contains(id, "s1") {
		t.Errorf("GetSessionId() = %q, want the endpoint's sessionId", id)
	}
}

// scriptedSSE is an HTTP+SSE server of the test's own (for what no real
// server does on command): each stream names the endpoint
// /message?sessionId=sN, and each request POSTed is answered on its stream
// with the messages answer returns for its method, id (as sent) and the
// result a plain server would give (echo answers "ours").
func scriptedSSE(t *testing.T, answer func(method, id, result string) []string) string {
	return scriptedSSEInspecting(t, nil, answer)
}

// scriptedSSEInspecting is scriptedSSE, with every request shown to
// inspect first.
func scriptedSSEInspecting(t *testing.T, inspect func(*http.Request), answer func(method, id, result string) []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Each stream is a session, s1, s2, …, named in its endpoint; a POST
	// is answered on its session's stream.
	var mu sync.Mutex
	streams := map[string]chan string{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inspect != nil {
			inspect(r)
		}
		if r.Method == http.MethodGet {
			mine := make(chan string, 64)
			mu.Lock()
			id := fmt.Sprintf("s%d", len(streams)+1)
			streams[id] = mine
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: endpoint\ndata: /message?sessionId=%s\n\n", id)
			w.(http.Flusher).Flush()
			for {
				select {
				case m := <-mine:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		}
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if len(msg.ID) == 0 {
			return
		}
		var result string
		switch msg.Method {
		case "initialize":
			result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"gateway","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
		default:
			result = `{"content":[{"type":"text","text":"ours"}]}`
		}
		mu.Lock()
		stream := streams[r.URL.Query().Get("sessionId")]
		mu.Unlock()
		for _, m := range answer(msg.Method, string(msg.ID), result) {
			stream <- m
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/sse"
}

// TestSSEAnswerOverTheLimit: an answer larger than WithMaxResponseBytes is
// read no further than the limit, by its deadline, the memory bounded.
// When its id comes first (mcp-go's and go-sdk's servers write it so), the
// call whose answer it was ends at once, ErrOutcomeUnknown with
// ErrResponseTooLarge, never sent again (the same answer would come back),
// and the rest of the event is skipped: the session is kept. When the id
// comes after the limit (the TypeScript SDK writes the result first), the
// stream is dropped, the session with it, and the calls in flight end as
// answers lost with their stream: replayed if safe, here until the
// attempts run out, ErrResponseTooLarge in the chain.
func TestSSEAnswerOverTheLimit(t *testing.T) {
	const limit = 64 << 10
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 4<<20) + `"}]}`
	for _, idFirst := range []bool{true, false} {
		name := "id first"
		if !idFirst {
			name = "id after the result"
		}
		t.Run(name, func(t *testing.T) {
			url := scriptedSSE(t, func(method, id, result string) []string {
				if method != "tools/call" {
					return []string{fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)}
				}
				if idFirst {
					return []string{fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, big)}
				}
				return []string{fmt.Sprintf(`{"result":%s,"jsonrpc":"2.0","id":%s}`, big, id)}
			})
			c, err := client.NewSSE(url, client.WithMaxResponseBytes(limit))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req := mcp.CallToolRequest{}
			req.Params.Name = "echo"
			_, err = c.CallTool(ctx, req)
			if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, client.ErrResponseTooLarge) {
				t.Fatalf("CallTool: %v; want ErrOutcomeUnknown and ErrResponseTooLarge", err)
			}
			t.Logf("%v", err)
			st := c.Stats()
			if idFirst {
				if st.Retries != 0 || st.Redials != 0 {
					t.Errorf("Stats: %d retries, %d redials: want the call never sent again and the session kept", st.Retries, st.Redials)
				}
				if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
					t.Errorf("the session after the skipped event: %v", err)
				}
				if st := c.Stats(); st.Redials != 0 {
					t.Errorf("Stats: %d redials after the skipped event", st.Redials)
				}
			} else if st.Redials == 0 {
				t.Error("the stream was not dropped")
			}
		})
	}
}
