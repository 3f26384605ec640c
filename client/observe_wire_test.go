package client

import (
	"encoding/json"
	"maps"
	"reflect"
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
		{"strings that look like structure", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"a}\"{,","arguments":{"x":[1,{"y":"]\\"}],"_meta":"no"}}}`,
			`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},"name":"a}\"{,","arguments":{"x":[1,{"y":"]\\"}],"_meta":"no"}}}`, "12"},
		{"duplicate meta", `{"jsonrpc":"2.0","id":13,"method":"m","params":{"_meta":"x","_meta":{}}}`,
			`{"jsonrpc":"2.0","id":13,"method":"m","params":{"_meta":"x","_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`, "13"},
		{"escaped key", `{"jsonrpc":"2.0","id":14,"method":"m","par\u0061ms":{}}`, "", ""},
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

// FuzzWithMeta: whatever the body, withMeta does not panic, and what it
// returns is the same message with the entries in params._meta, and those
// the message had there kept.
func FuzzWithMeta(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"}{"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
		`{"jsonrpc":"2.0","id":"x","method":"m","params":{}}`,
	} {
		f.Add([]byte(seed))
	}
	meta := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "a=b"}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _ := withMeta(body, meta)
		if out == nil {
			return
		}
		var in, got map[string]any
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatalf("rewrote a body that is not an object: %q", body)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("withMeta(%q) = %q: %v", body, out, err)
		}
		params, _ := in["params"].(map[string]any)
		if params == nil {
			params = map[string]any{}
		}
		own, _ := params["_meta"].(map[string]any)
		want := map[string]any{}
		for k, v := range meta {
			want[k] = v
		}
		maps.Copy(want, own)
		params = maps.Clone(params)
		params["_meta"] = want
		in["params"] = params
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("withMeta(%q)\n= %q\nwant the same message with _meta %v", body, out, want)
		}
	})
}
