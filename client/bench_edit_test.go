package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// benchCallBody is a tools/call as mcp-go writes it (the observers' edit
// of it is wire's BenchmarkEditRequest).
const benchCallBody = `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"increment","arguments":{"by":1,"note":"a short argument of a few words"}}}`

// BenchmarkProgressRewrite is what a call followed by progress costs each
// request a method sends without a typed _meta: the call's progressToken
// put in the body.
func BenchmarkProgressRewrite(b *testing.B) {
	p := &progressCall{Context: context.Background(), reg: new(progressRegistry)}
	body := []byte(benchCallBody)
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		out := p.RewriteRequest(req)
		if out == req {
			b.Fatal("no edit")
		}
		out.Body.Close()
	}
}

// BenchmarkDeclareApplyDefaults is the edit of the stateless era's
// per-request capabilities when the client applies elicitation defaults.
func BenchmarkDeclareApplyDefaults(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		params := map[string]json.RawMessage{
			"name":  json.RawMessage(`"echo"`),
			"_meta": json.RawMessage(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`),
		}
		if _, ok := declareApplyDefaults("tools/call", params).(json.RawMessage); !ok {
			b.Fatal("no edit")
		}
	}
}
