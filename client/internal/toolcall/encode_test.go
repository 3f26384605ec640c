package toolcall

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestWriteParams: the params are mcp-go's bytes, in both eras: as it
// marshals a CallToolParams, and as its per-request _meta leaves them
// (a map of the params' fields with "_meta" added, marshalled again).
func TestWriteParams(t *testing.T) {
	meta := []byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`)
	for _, name := range []string{"echo", "a<b>&\"c\"", "日本", "x\u2028y", "bad\xffutf8"} {
		for _, args := range []any{nil, map[string]any{"text": "<x>", "n": 1.5}, map[string]any(nil), []int{1}} {
			want, err := json.Marshal(mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			b := NewBuffer()
			if err := b.WriteParams(name, args, nil); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("session era: %s, want %s", got, want)
			}
			b.Free()

			fields := map[string]json.RawMessage{}
			if err := json.Unmarshal(want, &fields); err != nil {
				t.Fatal(err)
			}
			fields["_meta"] = meta
			want, err = json.Marshal(fields)
			if err != nil {
				t.Fatal(err)
			}
			b = NewBuffer()
			if err := b.WriteParams(name, args, meta); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("stateless era: %s, want %s", got, want)
			}
			b.Free()
		}
	}
}

func TestAppendRequest(t *testing.T) {
	params := []byte(`{"name":"echo","arguments":{"text":"x"}}`)
	want, err := json.Marshal(transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1 << 40)), Method: string(mcp.MethodToolsCall), Params: json.RawMessage(params)})
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendRequest(nil, 1<<40, params); string(got) != string(want) {
		t.Errorf("%s, want %s", got, want)
	}
}
