package streamable

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// A version the server took in place of mcp-go's is declared in the _meta
// of the requests that declare one, and nowhere else.
func TestDeclareVersion(t *testing.T) {
	meta := `{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` + mcp.MetaKeyClientInfo + `":{"name":"x","version":"1"}}`
	req := transport.JSONRPCRequest{Method: "tools/call", Params: map[string]json.RawMessage{
		"name": json.RawMessage(`"echo"`), "_meta": json.RawMessage(meta),
	}}
	got := declareVersion(req, "2027-03-01")
	if v := declaredVersion(got.Params); v != "2027-03-01" {
		t.Errorf("declared %q after declareVersion, want 2027-03-01", v)
	}
	if v := declaredVersion(req.Params); v != "2026-07-28" {
		t.Errorf("the request given was changed: it declares %q", v)
	}
	if m, _ := requestMeta(got.Params); m[mcp.MetaKeyClientInfo] == nil {
		t.Error("clientInfo lost from the _meta")
	}
	plain := transport.JSONRPCRequest{Method: "initialize", Params: map[string]any{"protocolVersion": "2025-11-25"}}
	if got := declareVersion(plain, "2027-03-01"); declaredVersion(got.Params) != "" {
		t.Error("a version declared in a request that declared none")
	}
}
