package notify

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestApplyElicitationDefaults(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "default": "John Doe"},
			"age":  map[string]any{"type": "integer", "default": 30},
			"none": map[string]any{"type": "string"},
			"address": map[string]any{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string", "default": "Paris"}},
			},
		},
		"anyOf": []any{map[string]any{"type": "object", "properties": map[string]any{"alt": map[string]any{"default": 1}}}},
		"oneOf": []any{true, map[string]any{"type": "object", "properties": map[string]any{"one": map[string]any{"default": "x"}}}},
	}
	type profile struct {
		Name string `json:"name"`
	}
	accept := func(content any) *mcp.ElicitationResult {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: content}}
	}
	for _, tc := range []struct {
		name   string
		mode   string
		schema any
		res    *mcp.ElicitationResult
		want   string
	}{
		{"missing fields filled", "", schema, accept(map[string]any{"name": "Ann", "address": map[string]any{}}),
			`{"address":{"city":"Paris"},"age":30,"alt":1,"name":"Ann","one":"x"}`},
		{"no content at all", "form", schema, accept(nil),
			`{"age":30,"alt":1,"name":"John Doe","one":"x"}`},
		{"a struct the handler returned", "", schema, accept(profile{Name: "Bo"}),
			`{"age":30,"alt":1,"name":"Bo","one":"x"}`},
		{"a given value is kept, even the zero one", "", schema, accept(map[string]any{"name": "", "age": 0, "alt": 2, "one": "y"}),
			`{"age":0,"alt":2,"name":"","one":"y"}`},
		{"declined", "", schema, &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}},
			`null`},
		{"URL mode", "url", schema, accept(map[string]any{}), `{}`},
		{"content not an object", "", schema, accept("yes"), `"yes"`},
		{"no schema", "", nil, accept(map[string]any{}), `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applyElicitationDefaults(mcp.ElicitationParams{Mode: tc.mode, RequestedSchema: tc.schema}, tc.res)
			got, _ := json.Marshal(tc.res.Content)
			if string(got) != tc.want {
				t.Errorf("content %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDeclareApplyDefaults(t *testing.T) {
	initialize := func(elicitation string) any {
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"roots":{}` + elicitation + `},"clientInfo":{"name":"x"}}`)
	}
	encode := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, tc := range []struct {
		name, method string
		params       any
		want         string // a substring of the encoded params, or "" for unchanged
	}{
		{"initialize, empty elicitation means form", "initialize", initialize(`,"elicitation":{}`), `"elicitation":{"form":{"applyDefaults":true}}`},
		{"initialize, form and url", "initialize", initialize(`,"elicitation":{"form":{},"url":{}}`), `"form":{"applyDefaults":true}`},
		{"initialize, url only", "initialize", initialize(`,"elicitation":{"url":{}}`), ""},
		{"initialize, no elicitation", "initialize", initialize(``), ""},
		{"stateless request meta", "tools/call", map[string]json.RawMessage{
			"name":  json.RawMessage(`"echo"`),
			"_meta": json.RawMessage(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`),
		}, `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{"applyDefaults":true}}}`},
		{"stateless request of the client's own (tasks.Request)", "tools/call",
			json.RawMessage(`{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}`),
			`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{"applyDefaults":true}}}`},
		{"session-era request", "tools/call", map[string]any{"name": "echo"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := encode(DeclareApplyDefaults(tc.method, tc.params))
			switch {
			case tc.want == "" && got != encode(tc.params):
				t.Errorf("params changed: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("params %s, want %s in them", got, tc.want)
			}
		})
	}
}

// The caller's handler is read back from its options, and only an
// elicitation handler makes the client wrap it.
func TestWithElicitationDefaults(t *testing.T) {
	if _, on := WithElicitationDefaults([]mcpclient.ClientOption{mcpclient.WithRootsHandler(nil)}); on {
		t.Error("no elicitation handler, yet defaults are applied")
	}
	called := 0
	h := elicitor(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		called++
		if req.Params.Message != "hi" {
			t.Errorf("handler got %+v", req.Params)
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
	})
	opts, on := WithElicitationDefaults([]mcpclient.ClientOption{mcpclient.WithElicitationHandler(h)})
	if !on || len(opts) != 2 {
		t.Fatalf("WithElicitationDefaults: on %v, %d options", on, len(opts))
	}
	// The last option is the wrapper: apply it and call through it.
	probe := &optionProbe{}
	mc := mcpclient.NewClient(probe, opts...)
	if err := mc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := probe.incoming(context.Background(), jsonrpcElicit(map[string]any{
		"message": "hi",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{
			"n": map[string]any{"type": "integer", "default": 7}}},
	}))
	if err != nil || called != 1 || !strings.Contains(string(resp.Result), `"content":{"n":7}`) {
		t.Errorf("through the wrapper: %s, %v, handler called %d times", resp.Result, err, called)
	}
}

type elicitor func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitor) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

func jsonrpcElicit(params any) transport.JSONRPCRequest {
	return transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: string(mcp.MethodElicitationCreate), Params: params}
}
