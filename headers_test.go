package resilientmcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// sentRequest is what a middleware in front of the server saw of a POSTed
// JSON-RPC message.
type sentRequest struct {
	method         string
	id             json.RawMessage // nil for a notification
	params         map[string]json.RawMessage
	hMethod, hName string // the Mcp-Method and Mcp-Name headers
	hasName        bool
}

// routedName is the name SEP-2243 routes a request on: the tool of a
// tools/call, the prompt of a prompts/get, the URI of a resources/read; ""
// for other methods.
func (s sentRequest) routedName() string {
	var field string
	switch s.method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	default:
		return ""
	}
	var name string
	_ = json.Unmarshal(s.params[field], &name)
	return name
}

// wireRecorder is a testserver Guard that records every JSON-RPC message
// POSTed to the server, with the headers load balancers route on.
type wireRecorder struct {
	mu   sync.Mutex
	seen []sentRequest
}

func (w *wireRecorder) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     json.RawMessage            `json:"id"`
				Method string                     `json:"method"`
				Params map[string]json.RawMessage `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				s := sentRequest{method: msg.Method, id: msg.ID, params: msg.Params,
					hMethod: r.Header.Get(mcp.HeaderMethod), hName: r.Header.Get(mcp.HeaderName)}
				_, s.hasName = r.Header[http.CanonicalHeaderKey(mcp.HeaderName)]
				w.mu.Lock()
				w.seen = append(w.seen, s)
				w.mu.Unlock()
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// records is what the recorder saw so far, in order.
func (w *wireRecorder) records() []sentRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen)
}

// 2026-07-28 (SEP-2243): every request carries Mcp-Method, and tools/call,
// resources/read and prompts/get carry Mcp-Name with the tool, the URI or
// the prompt, as load balancers route on them: the caller's requests of
// every kind, the client's own handshake and keepalive probes, and the
// tools/list it sends to decide whether a call may be replayed.
func TestStandardHeadersOnEveryRequest(t *testing.T) {
	rec := &wireRecorder{}
	r := newRig(t, testserver.Config{Era: testserver.StatelessEra, Guard: rec.guard}, false, client.WithKeepAlive(30*time.Millisecond))
	r.start()
	ctx := r.ctx()

	// The client's own listing: a lost answer to a tool it never listed.
	r.srv.FailPOSTs(1, http.StatusBadGateway, "", true, "tools/call")
	if _, err := callTool(ctx, r.c, "increment", nil); err == nil {
		t.Fatal("increment answered 502 succeeded")
	}
	if _, err := r.c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	r.mustEcho("routed")
	if _, err := r.c.ListResources(ctx, mcp.ListResourcesRequest{}); err != nil {
		t.Fatal(err)
	}
	read := mcp.ReadResourceRequest{}
	read.Params.URI = testserver.CounterURI
	if _, err := r.c.ReadResource(ctx, read); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.ListPrompts(ctx, mcp.ListPromptsRequest{}); err != nil {
		t.Fatal(err)
	}
	get := mcp.GetPromptRequest{}
	get.Params.Name = testserver.Prompts[0]
	if _, err := r.c.GetPrompt(ctx, get); err != nil {
		t.Fatal(err)
	}
	probes := r.c.Stats().Probes
	eventually(t, "a keepalive probe", func() bool { return r.c.Stats().Probes > probes })

	kinds := map[string]int{}
	for _, s := range rec.records() {
		if len(s.id) == 0 {
			continue // a notification
		}
		kinds[s.method]++
		if s.hMethod != s.method {
			t.Errorf("%s sent with Mcp-Method %q", s.method, s.hMethod)
		}
		name := s.routedName()
		if name != "" && s.hName != name {
			t.Errorf("%s of %q sent with Mcp-Name %q", s.method, name, s.hName)
		}
		if name == "" && s.hasName {
			t.Errorf("%s sent with Mcp-Name %q", s.method, s.hName)
		}
	}
	t.Logf("requests by method: %v", kinds)
	for _, want := range []string{"server/discover", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list", "prompts/list", "prompts/get"} {
		if kinds[want] == 0 {
			t.Errorf("no %s seen: the test did not cover it", want)
		}
	}
	if kinds["tools/list"] < 2 {
		t.Errorf("%d tools/list seen, want the client's own and the caller's", kinds["tools/list"])
	}
	if kinds["server/discover"] < 2 {
		t.Errorf("%d server/discover seen, want the handshake's and a probe's", kinds["server/discover"])
	}
}
