package notify

import (
	"encoding/json"
	"testing"
)

// BenchmarkDeclareApplyDefaults is the edit of the stateless era's
// per-request capabilities when the client applies elicitation defaults.
func BenchmarkDeclareApplyDefaults(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		params := map[string]json.RawMessage{
			"name":  json.RawMessage(`"echo"`),
			"_meta": json.RawMessage(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`),
		}
		if _, ok := DeclareApplyDefaults("tools/call", params).(json.RawMessage); !ok {
			b.Fatal("no edit")
		}
	}
}
