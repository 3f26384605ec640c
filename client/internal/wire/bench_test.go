package wire

import (
	"bytes"
	"context"
	"encoding/json"
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
	// The text of a tool's answer: plain, or JSON carried as text, where
	// every quote of the JSON is escaped, and its line breaks too.
	texts := map[string]func(size int) string{
		"plain": func(size int) string { return strings.Repeat("a", size) },
		// Text with escaped line breaks and no quote: each backslash far
		// from the string's end.
		"lines": func(size int) string { return strings.Repeat(`a line\n`, size/8+1)[:size] },
		"jsontext": func(size int) string {
			const item = `{\"id\":1234,\"name\":\"a name\",\"tags\":[\"x\",\"y\"],\"path\":\"C:\\\\dir\"},\n`
			return strings.Repeat(item, size/len(item)+1)[:size]
		},
	}
	// Structured content of a tool's answer, the guard skipping it as a
	// nested value: many small objects (the same items as jsontext, not
	// carried as text), or arrays nested deep.
	values := map[string]func(size int) string{
		"objects": func(size int) string {
			const item = `{"id":1234,"name":"a name","tags":["x","y"],"path":"C:\\dir"}`
			return repeatJoined(item, size)
		},
		"deep": func(size int) string {
			const depth = 100
			return repeatJoined(strings.Repeat("[", depth)+"1"+strings.Repeat("]", depth), size)
		},
	}
	answer := func(text string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`)
	}
	structured := func(value string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[],"structuredContent":{"items":` + value + `}}}`)
	}
	for _, kind := range []string{"plain", "jsontext", "lines", "objects", "deep"} {
		for _, size := range []int{64, 1 << 20} {
			if kind != "plain" && size < 1<<20 {
				continue
			}
			var body []byte
			if value, ok := values[kind]; ok {
				body = structured(value(size))
			} else {
				text := texts[kind](size)
				if kind != "plain" {
					// Cut after a whole escape, so that the string ends
					// where the answer says.
					for strings.HasSuffix(text, `\`) {
						text = text[:len(text)-1]
					}
				}
				body = answer(text)
			}
			if !json.Valid(body) {
				b.Fatalf("%s: the answer is not JSON", kind)
			}
			for _, sse := range []bool{false, true} {
				body, contentType := body, "application/json"
				if sse {
					body, contentType = append(append([]byte("event: message\ndata: "), body...), "\n\n"...), "text/event-stream"
				}
				benchGuard(b, kind, body, contentType, sse)
			}
		}
	}
}

// repeatJoined is a JSON array of copies of item, about size bytes long.
func repeatJoined(item string, size int) string {
	n := max(size/(len(item)+1), 1)
	return "[" + strings.Repeat(item+",", n-1) + item + "]"
}

func benchGuard(b *testing.B, kind string, body []byte, contentType string, sse bool) {
	for _, guarded := range []bool{false, true} {
		name := fmt.Sprintf("%s/%s/answer=%dB/guarded=%v", kind, map[bool]string{false: "json", true: "sse"}[sse], len(body), guarded)
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

// BenchmarkGuardLearnsTheID is what the guard spends learning the id of
// a request on its way out: read from its body (mcp-go's requests), or
// told (Exchange.Expect, the hot path's tools/call), the tracker's taking
// of it included.
//
//	go test -run '^$' -bench BenchmarkGuardLearnsTheID -benchmem ./client/internal/wire
func BenchmarkGuardLearnsTheID(b *testing.B) {
	ex := NewExchange()
	req, _ := http.NewRequestWithContext(ex.Bind(context.Background()), http.MethodPost, "http://127.0.0.1:1/mcp", bytes.NewReader([]byte(callBody)))
	for _, told := range []bool{false, true} {
		b.Run(map[bool]string{false: "id=read", true: "id=told"}[told], func(b *testing.B) {
			g := new(guard)
			b.ReportAllocs()
			for b.Loop() {
				var id *idToken
				if told {
					ex.Expect(12)
					ex.mu.Lock() // as the tracker takes it
					t := ex.takeTold()
					ex.mu.Unlock()
					id = &t
				}
				*g = guard{ex: ex}
				g.expect(req, id)
				if !g.check || string(g.want.bytes()) != "12" {
					b.Fatalf("learnt %q", g.want.bytes())
				}
			}
		})
	}
}
