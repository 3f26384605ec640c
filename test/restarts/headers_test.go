package restarts

import (
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// 2026-07-28 (SEP-2243): every request carries Mcp-Method, and tools/call,
// resources/read and prompts/get carry Mcp-Name with the tool, the URI or
// the prompt, as load balancers route on them: the caller's requests of
// every kind, the client's own handshake and keepalive probes, and the
// tools/list it sends to decide whether a call may be replayed.
func TestStandardHeadersOnEveryRequest(t *testing.T) {
	rec := &rig.WireRecorder{}
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra, Guard: rec.Guard}, false, client.WithKeepAlive(30*time.Millisecond))
	r.Start()
	ctx := r.Ctx()

	// The client's own listing: a lost answer to a tool it never listed.
	r.Srv.FailPOSTs(1, http.StatusBadGateway, "", true, "tools/call")
	if _, err := rig.CallTool(ctx, r.C, "increment", nil); err == nil {
		t.Fatal("increment answered 502 succeeded")
	}
	if _, err := r.C.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("routed")
	if _, err := r.C.ListResources(ctx, mcp.ListResourcesRequest{}); err != nil {
		t.Fatal(err)
	}
	read := mcp.ReadResourceRequest{}
	read.Params.URI = testserver.CounterURI
	if _, err := r.C.ReadResource(ctx, read); err != nil {
		t.Fatal(err)
	}
	if _, err := r.C.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.C.ListPrompts(ctx, mcp.ListPromptsRequest{}); err != nil {
		t.Fatal(err)
	}
	get := mcp.GetPromptRequest{}
	get.Params.Name = testserver.Prompts[0]
	if _, err := r.C.GetPrompt(ctx, get); err != nil {
		t.Fatal(err)
	}
	probes := r.C.Stats().Probes
	rig.Eventually(t, "a keepalive probe", func() bool { return r.C.Stats().Probes > probes })

	kinds := map[string]int{}
	for _, s := range rec.Records() {
		if len(s.ID) == 0 {
			continue // a notification
		}
		kinds[s.Method]++
		if s.HeaderMethod != s.Method {
			t.Errorf("%s sent with Mcp-Method %q", s.Method, s.HeaderMethod)
		}
		name := s.RoutedName()
		if name != "" && s.HeaderName != name {
			t.Errorf("%s of %q sent with Mcp-Name %q", s.Method, name, s.HeaderName)
		}
		if name == "" && s.HasName {
			t.Errorf("%s sent with Mcp-Name %q", s.Method, s.HeaderName)
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
