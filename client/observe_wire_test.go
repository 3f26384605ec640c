package client

import (
	"encoding/json"
	"testing"
)

// withMeta adds the propagator's entries to params._meta whatever shape
// the message's params have, keeps the message otherwise as it was, and
// leaves alone what cannot carry them.
func TestWithMeta(t *testing.T) {
	meta := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "baggage": "k=v"}
	for _, tc := range []struct {
		name, in, want, id string
	}{
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`, "1"},
		{"null params", `{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`,
			`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`, "2"},
		{"empty params", `{"jsonrpc":"2.0","id":"a\"b","method":"tools/list","params":{}}`,
			`{"jsonrpc":"2.0","id":"a\"b","method":"tools/list","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`, `a"b`},
		{"params", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"_meta":1}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},"name":"echo","arguments":{"_meta":1}}}`, "3"},
		{"own meta wins", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","_meta":{"traceparent":"mine","progressToken":7}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","_meta":{"baggage":"k=v","traceparent":"mine","progressToken":7}}}`, "4"},
		{"empty meta", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{} }}`,
			`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} }}`, "5"},
		{"notification", ` {"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
			` {"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}` + "\n", ""},
		{"response", `{"jsonrpc":"2.0","id":6,"result":{}}`, "", "6"},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, "", ""},
		{"positional", `{"jsonrpc":"2.0","id":8,"method":"m","params":[1]}`, "", "8"},
		{"meta not an object", `{"jsonrpc":"2.0","id":9,"method":"m","params":{"_meta":"x"}}`, "", "9"},
		{"all its own", `{"jsonrpc":"2.0","id":10,"method":"m","params":{"_meta":{"traceparent":"a","baggage":"b"}}}`, "", "10"},
		{"garbage", `{"jsonrpc":`, "", ""},
		{"trailing", `{"jsonrpc":"2.0","id":11,"method":"m"} {}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, id := withMeta([]byte(tc.in), meta)
			if string(out) != tc.want || id != tc.id {
				t.Errorf("withMeta(%s)\n= %s, id %q\nwant %s, id %q", tc.in, out, id, tc.want, tc.id)
			}
			if out != nil && !json.Valid(out) {
				t.Errorf("not JSON: %s", out)
			}
		})
	}
}
