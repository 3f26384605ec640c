package progress

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// benchCallBody is a tools/call as mcp-go writes it (the observers' edit
// of it is wire's BenchmarkEditRequest).
const benchCallBody = `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"increment","arguments":{"by":1,"note":"a short argument of a few words"}}}`

// BenchmarkProgressRewrite is what a call followed by progress costs each
// request: the call's progressToken put in the body.
func BenchmarkProgressRewrite(b *testing.B) {
	p := &Call{Context: context.Background(), reg: new(Registry)}
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
