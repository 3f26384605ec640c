package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkGuard is what checking an answer costs (guard.go): a tools/call
// request through the tracker, its id read, and its answer read to the end
// through the id check and the size limit, against the same through the
// bare transport. The transport is in memory, so the difference is the
// guard's alone.
func BenchmarkGuard(b *testing.B) {
	answer := func(size int) []byte {
		return []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"` + strings.Repeat("a", size) + `"}]}}`)
	}
	for _, size := range []int{64, 1 << 20} {
		for _, sse := range []bool{false, true} {
			body, contentType := answer(size), "application/json"
			if sse {
				body, contentType = append(append([]byte("event: message\ndata: "), body...), "\n\n"...), "text/event-stream"
			}
			for _, guarded := range []bool{false, true} {
				name := fmt.Sprintf("%s/answer=%dB/guarded=%v", map[bool]string{false: "json", true: "sse"}[sse], len(body), guarded)
				b.Run(name, func(b *testing.B) {
					var rt http.RoundTripper = &answering{contentType: contentType, body: body, chunk: 32 << 10}
					if guarded {
						rt = &Tracker{next: rt}
					}
					ctx := NewExchange().Bind(context.Background())
					b.SetBytes(int64(len(body)))
					b.ReportAllocs()
					for b.Loop() {
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/mcp", bytes.NewReader([]byte(callBody)))
						resp, err := rt.RoundTrip(req)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := io.Copy(io.Discard, resp.Body); err != nil {
							b.Fatal(err)
						}
						resp.Body.Close()
					}
				})
			}
		}
	}
}
