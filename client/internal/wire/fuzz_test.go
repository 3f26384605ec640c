package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Fuzz targets for every place the client parses what a server sends: the
// guard's reading of JSON bodies and SSE streams (checked against what
// mcp-go itself makes of the same bytes), request ids, Content-Type,
// Retry-After and the classification of failures. Their seed corpora run
// with every `go test`; .ci/run fuzzes each for a few seconds.

const fuzzWant = "7" // the request id the fuzzed answers are checked against

func isOurs(id mcp.RequestId) bool { return id.Value() == int64(7) }

var jsonSeeds = []string{
	`{"jsonrpc":"2.0","id":7,"result":{}}`,
	`{"jsonrpc":"2.0","id":8,"result":{}}`,
	`{"jsonrpc":"2.0","result":{"id":8},"id":7}`,
	`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"a \"}\" b"}]},"id":8}`,
	`{"ID":8,"result":{}}`,
	`{"iD":8,"id":7}`,
	`{"id":7,"Id":8}`,
	`{"\u0069d":8}`,
	`{"i\u0064":7.0}`,
	`{"id":"7"}`,
	`{"id":7e0}`,
	`{"id":null,"error":{"code":-32700,"message":"parse error"}}`,
	`{"id":[7]}`,
	`{"id":{"a":7}}`,
	`{"result":{}}`,
	`  {"id" : 8 , "result" : [ ] }  trailing`,
	`[{"id":8}]`,
	`{"id":8`,
	`{"id":8,}`,
	`{"method":"x","id":8}`,
	`<html>not json</html>`,
	`{"id":70000000000000000000000000000000000000000000000000000000000000000000000000000}`,
	"{\"\xc4\xb1d\":8}",
	"{\"\xe2\x84\xaad\":8}",
	`{"id":8,"result":"\ud800"}`,
	// Escapes the string scan must count: JSON carried as text, runs of
	// backslashes before a quote, a quote after an escaped backslash.
	`{"result":{"text":"{\"id\":8,\"a\":[\"x\"]}"},"id":8}`,
	`{"result":{"t":"\\\\\"id\":7"},"id":8}`,
	`{"result":{"t":"a\\"},"id":8}`,
	`{"result":"\\\\\\","id":8}`,
	`{"result":{"t":"\n\n\n\n\\\"\n"},"ID":8}`,
	// Longer than a block of the scan (scan.go): escapes, strings and
	// brackets across blocks.
	`{"result":{"text":"` + strings.Repeat(`{\"id\":8,\"a\":[\"x\\\\\"]},`, 6) + `"},"id":7}`,
	`{"result":{"items":[` + strings.Repeat(`{"id":8,"t":"\\\"]}"},[[1]],`, 6) + `{}]},"id":8}`,
}

// FuzzGuardJSON holds the guard to mcp-go's decoding of a JSON answer: an
// answer mcp-go would take for another request's is refused, and an answer
// the guard lets through decodes exactly as it would have without it.
func FuzzGuardJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), uint8(0), uint16(0))
		f.Add([]byte(s), uint8(1), uint16(20))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, limit uint16) {
		lim := int64(limit)
		if lim == 0 {
			lim = 1 << 20
		}
		g, _ := testGuard(data, int(chunk), false, lim, fuzzWant)
		got, gotErr := mcpgoResponse(g)
		direct, directErr := mcpgoResponse(bytes.NewReader(data))

		var tooLarge *responseTooLargeError
		var wrong *WrongAnswerError
		switch {
		case errors.As(gotErr, &tooLarge):
			if int64(len(data)) <= lim {
				t.Fatalf("refused as too large: %d bytes, limit %d", len(data), lim)
			}
			return
		case errors.As(gotErr, &wrong):
			// A right answer must not be refused, unless its id is too
			// long to keep.
			if directErr == nil && isOurs(direct.ID) {
				var raw struct {
					ID json.RawMessage `json:"id"`
				}
				if json.NewDecoder(bytes.NewReader(data)).Decode(&raw) == nil && len(raw.ID) <= maxIDLen {
					t.Fatalf("refused %q: %v", data, gotErr)
				}
			}
			return
		}
		if int64(len(data)) > lim && (directErr == nil || gotErr == nil) {
			// mcp-go reads at most the value; the guard counts what it read.
			if g.n > lim {
				t.Fatalf("read %d bytes past the limit %d without refusing", g.n, lim)
			}
		}
		if gotErr == nil && !got.ID.IsNil() && !isOurs(got.ID) {
			t.Fatalf("let through an answer to request %v: %q", got.ID, data)
		}
		if (gotErr == nil) != (directErr == nil) {
			t.Fatalf("through the guard: %v; without: %v (%q)", gotErr, directErr, data)
		}
		if gotErr == nil && (got.ID.String() != direct.ID.String() || !bytes.Equal(got.Result, direct.Result)) {
			t.Fatalf("through the guard decoded as %v %s, without as %v %s", got.ID, got.Result, direct.ID, direct.Result)
		}
	})
}

var sseSeeds = []string{
	"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n",
	"data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n",
	"data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}",
	"data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n",
	": keepalive\n\n: keepalive\n\ndata: {\"id\":7,\"result\":{}}\n\n",
	"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"id\":7,\"result\":1}\n\n",
	"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"sampling/createMessage\",\"params\":{}}\n\ndata: {\"id\":7,\"result\":1}\n\n",
	"data: {\"id\":8,\"method\":5}\n\n",
	"data: {\"id\":8,\"method\":\"x\",\"METHOD\":5}\n\n",
	"data: {\"id\":8,\"Method\":\"x\"}\n\n",
	"data: {\"id\":\r\ndata: 8}\r\n\r\n",
	"data:{\"id\":8}\r\r\n\r\n",
	"data:\rx\n\n",
	"\r\r\ndata: {\"id\":8}\n\n",
	"data: {\"id\":7}\n\ndata: {\"id\":8}\n\n",
	"data: {\"id\":8} junk\n\n",
	"data: \ndata: {\"id\":8}\n\n",
	"data: {\"id\":8}\ndata: \n\n",
	"id: 1\nretry: 10\nevent: x\ndata: {\"id\":8}\n\n",
	"data: {\"id\":7}\ndata: {\"id\":8}\n\n",
	"data: {\"id\":8,\"result\":{}}\ndata: partial",
	"data: {\"id\":\"7\"}\n\n",
	"data: {\"id\":7.0}\n\n",
	"data: " + strings.Repeat("x", 300) + "\n\n",
	strings.Repeat(": comment\n", 40),
	"data: {\"result\":{\"items\":[" + strings.Repeat(`{"id":8,"t":"\\\"]}"},[[1]],`, 6) + "{}]},\"id\":8}\n\n",
}

// FuzzGuardSSE holds the guard to mcp-go's reading of an SSE stream: the
// answer mcp-go delivers is never another request's, an answer mcp-go
// would deliver rightly is not refused, and an event is refused for its size
// exactly when it exceeds the limit.
func FuzzGuardSSE(f *testing.F) {
	for _, s := range sseSeeds {
		f.Add([]byte(s), uint8(0), uint16(256))
		f.Add([]byte(s), uint8(1), uint16(256))
		f.Add([]byte(s), uint8(7), uint16(20))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, limit uint16) {
		lim := int(limit)
		if lim == 0 {
			lim = 1 << 20
		}
		g, _ := testGuard(data, int(chunk), true, int64(lim), fuzzWant)
		got := mcpgoSSE(g, lim)
		direct := mcpgoSSE(bytes.NewReader(data), lim)

		var tooLarge *responseTooLargeError
		var wrong *WrongAnswerError
		if got.response != nil && !isOurs(got.response.ID) {
			t.Fatalf("delivered an answer to request %v: %q", got.response.ID, data)
		}
		switch {
		case errors.As(got.readErr, &tooLarge):
			if !direct.oversized {
				t.Fatalf("refused as too large, but no event exceeds %d: %q", lim, data)
			}
		case errors.As(got.readErr, &wrong):
			if direct.oversized || direct.unparsed {
				return // the guard may refuse what mcp-go would ignore
			}
			for _, id := range direct.rawIDs {
				if len(id) > maxIDLen {
					return
				}
			}
			if direct.response != nil && isOurs(direct.response.ID) {
				t.Fatalf("refused a stream whose answer is the request's: %v (%q)", got.readErr, data)
			}
		case got.readErr != nil:
			t.Fatalf("unexpected read error %v", got.readErr)
		default:
			if direct.oversized && got.response == nil {
				t.Fatalf("an event exceeds the limit %d and was not refused: %q", lim, data)
			}
			if (direct.response == nil) != (got.response == nil) {
				t.Fatalf("through the guard: %+v; without: %+v", got.response, direct.response)
			}
		}
	})
}

// FuzzRequestID: the id read from the first bytes of a request body is the
// one mcp-go marshalled, or none; never another.
func FuzzRequestID(f *testing.F) {
	f.Add(int64(1), "", "tools/call", `{"name":"echo"}`, false)
	f.Add(int64(-9223372036854775808), "", "initialize", `{}`, false)
	f.Add(int64(0), "a\"b<c>\\", "ping", `null`, true)
	f.Add(int64(0), strings.Repeat("x", 100), "ping", `null`, true)
	f.Fuzz(func(t *testing.T, n int64, s, method, params string, stringID bool) {
		id := mcp.NewRequestId(n)
		if stringID {
			id = mcp.NewRequestId(s)
		}
		req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method}
		if json.Valid([]byte(params)) {
			req.Params = json.RawMessage(params)
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Skip()
		}
		want, _ := json.Marshal(id)
		got, ok := requestID(body[:min(len(body), 96)])
		if ok && !bytes.Equal(got.bytes(), want) {
			t.Fatalf("request id %s read as %s from %s", want, got.bytes(), body)
		}
		if !ok && !stringID {
			t.Fatalf("no id found in %s", body)
		}
		// A response, or a notification, is not a request.
		resp, _ := json.Marshal(transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: json.RawMessage(`{}`)})
		if _, ok := requestID(resp[:min(len(resp), 96)]); ok {
			t.Fatalf("a response read as a request: %s", resp)
		}
	})
}

// FuzzContentType: an answer is read as an SSE stream exactly when mcp-go
// reads it as one.
func FuzzContentType(f *testing.F) {
	for _, s := range []string{"text/event-stream", "Text/Event-Stream; charset=utf-8", " text/event-stream ;", "application/json",
		"text/event-streams", "text/event-ſtream", "\u00a0text/event-stream", "text/event-stream; a=\"", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		mt, _, _ := mime.ParseMediaType(v)
		if got, want := isEventStream(v), mt == "text/event-stream"; got != want {
			t.Fatalf("isEventStream(%q) = %v; mcp-go reads %q", v, got, mt)
		}
	})
}

// FuzzRetryAfter: any Retry-After is a pause of zero or more, never a
// negative or wrapped-around one.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "0", "5", "-1", "+3", "99999999999", "9223372036854775807", "1e3", " 5",
		"Sat, 21 Nov 2026 12:00:05 GMT", "Fri, 20 Nov 2026 12:00:05 GMT", "Sunday, 06-Nov-94 08:49:37 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d := ParseRetryAfter(v, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v", v, d)
		}
		if secs, err := strconv.ParseUint(v, 10, 64); err == nil && secs < 1<<30 && d != time.Duration(secs)*time.Second {
			t.Fatalf("ParseRetryAfter(%q) = %v, want %ds", v, d, secs)
		}
	})
}
