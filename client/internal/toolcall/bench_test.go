package toolcall

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkDecode reads a tools/call answer (server-everything's
// get-resource-reference: text, an embedded resource, text) as mcp-go's
// transport and parser do, and as DecodeResponse does.
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./client/internal/toolcall
func BenchmarkDecode(b *testing.B) {
	var result []byte
	for _, r := range recorded(b) {
		if r.name == "everything-3-get-resource-reference.json" {
			result = r.data
		}
	}
	if result == nil {
		b.Fatal("no recorded answer")
	}
	body := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), result...), '}')
	b.Run("decoder=mcp-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var resp transport.JSONRPCResponse
			if err := json.NewDecoder(bytes.NewReader(body)).Decode(&resp); err != nil {
				b.Fatal(err)
			}
			if _, err := mcp.ParseCallToolResult(&resp.Result); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder=toolcall", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := DecodeResponse(body); !ok {
				b.Fatal("not read")
			}
		}
	})
}
