package wire

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"
)

// addMeta is the observers' edit (client/internal/observers/wire.go): meta's entries
// in params._meta, the request's own entries kept.
func addMeta(body []byte, meta map[string]string) ([]byte, string) {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return EditRequest(body, func(e *Edit) {
		for _, k := range keys {
			if _, own := e.Meta(k); !own {
				e.SetMetaString(k, meta[k])
			}
		}
	})
}

// EditRequest adds entries to params._meta whatever shape the message's
// params have, keeps the message otherwise as it was, and leaves alone
// what cannot carry them. (The cases of withMeta, which it replaced.)
func TestEditRequestMeta(t *testing.T) {
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
		{"null meta", `{"jsonrpc":"2.0","id":15,"method":"m","params":{"_meta":null,"a":1}}`,
			`{"jsonrpc":"2.0","id":15,"method":"m","params":{"_meta":{"baggage":"k=v","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},"a":1}}`, "15"},
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
			out, id := addMeta([]byte(tc.in), meta)
			if string(out) != tc.want || id != tc.id {
				t.Errorf("addMeta(%s)\n= %s, id %q\nwant %s, id %q", tc.in, out, id, tc.want, tc.id)
			}
			if out != nil && !json.Valid(out) {
				t.Errorf("not JSON: %s", out)
			}
		})
	}
}

// EditParams sets members of params and entries of their _meta, in place
// of those there are (the last of a key), added otherwise; it leaves alone
// params that cannot carry them.
func TestEditParams(t *testing.T) {
	set := func(e *Edit) {
		e.SetParam("capabilities", json.RawMessage(`{"x":1}`))
		e.SetMeta("v", json.RawMessage(`"2026-07-28"`))
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"none", ``, `{"_meta":{"v":"2026-07-28"},"capabilities":{"x":1}}`},
		{"null", ` null `, `{"_meta":{"v":"2026-07-28"},"capabilities":{"x":1}}`},
		{"empty", `{ }`, `{"_meta":{"v":"2026-07-28"} ,"capabilities":{"x":1}}`},
		{"replaced", `{"capabilities":{},"b":[1],"_meta":{"w":1,"v":"old"}}`, `{"capabilities":{"x":1},"b":[1],"_meta":{"w":1,"v":"2026-07-28"}}`},
		{"the last of a key", `{"capabilities":1,"capabilities":2}`, `{"_meta":{"v":"2026-07-28"},"capabilities":1,"capabilities":{"x":1}}`},
		{"added", `{"a":1,"_meta":{"w":1}}`, `{"a":1,"_meta":{"v":"2026-07-28","w":1},"capabilities":{"x":1}}`},
		{"null meta", `{"a":1,"_meta":null}`, `{"a":1,"_meta":{"v":"2026-07-28"},"capabilities":{"x":1}}`},
		{"positional", `[1]`, ``},
		{"meta not an object", `{"_meta":[]}`, ``},
		{"not JSON", `{"a":`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := EditParams([]byte(tc.in), set)
			if string(out) != tc.want {
				t.Errorf("EditParams(%s)\n= %s\nwant %s", tc.in, out, tc.want)
			}
		})
	}
	if out := EditParams([]byte(`{"a":1}`), func(*Edit) {}); out != nil {
		t.Errorf("an edit that sets nothing = %s", out)
	}
	if out := EditParams([]byte(`{"a":1}`), func(e *Edit) { e.SetParam("_meta", json.RawMessage(`1`)) }); out != nil {
		t.Errorf("SetParam(_meta) = %s", out)
	}
}

// FuzzEditRequest: whatever the body, EditRequest does not panic; what it
// returns is valid JSON, the message's id and every member but params as
// they were, byte for byte, the params members and _meta entries it did
// not set too; those it set have their values, but for an entry the
// request had its own of, which it keeps (the observers' edit). EditParams
// makes the same params of the same params. (It took FuzzWithMeta's
// seeds and checks along.)
func FuzzEditRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"}{"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
		`{"jsonrpc":"2.0","id":"x","method":"m","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"m","params":{"_meta":null,"name":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"m","params":{"_meta":{"traceparent":"mine","k":[]}}}`,
	} {
		f.Add([]byte(seed), "k", "v\"<\x01", "name")
	}
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	f.Fuzz(func(t *testing.T, body []byte, mkey, mval, pkey string) {
		if mkey == "traceparent" || !utf8.ValidString(mkey) || !utf8.ValidString(pkey) {
			t.Skip()
		}
		edit := func(e *Edit) {
			if _, own := e.Meta("traceparent"); !own {
				e.SetMetaString("traceparent", traceparent)
			}
			e.SetMetaString(mkey, mval)
			e.SetParam(pkey, json.RawMessage(`{"x":1}`))
		}
		out, id := EditRequest(body, edit)
		var in map[string]json.RawMessage
		if json.Unmarshal(body, &in) == nil && in != nil {
			if want := scalarOf(t, in["id"]); id != want && (out != nil || Members(body, func([]byte, int, int) {})) {
				t.Fatalf("EditRequest(%q): id %q, want %q", body, id, want)
			}
		}
		if out == nil {
			return
		}
		if !json.Valid(body) || !json.Valid(out) {
			t.Fatalf("EditRequest(%q) = %q: not JSON", body, out)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("EditRequest(%q) = %q: %v", body, out, err)
		}
		sameExcept(t, "message", in, got, "params")
		pin, pout := object(t, in["params"]), object(t, got["params"])
		sameExcept(t, "params", pin, pout, "_meta", pkey)
		if pkey != "_meta" && string(pout[pkey]) != `{"x":1}` {
			t.Fatalf("params %s: %s = %s", got["params"], pkey, pout[pkey])
		}
		min, mout := object(t, pin["_meta"]), object(t, pout["_meta"])
		sameExcept(t, "_meta", min, mout, mkey, "traceparent")
		var s string
		want, _ := json.Marshal(mval)
		_ = json.Unmarshal(want, &s)
		if v, ok := mout[mkey]; !ok || scalarOf(t, v) != s {
			t.Fatalf("_meta %s: %q = %s, want %q", pout["_meta"], mkey, v, s)
		}
		if own, ok := min["traceparent"]; ok && !bytes.Equal(own, mout["traceparent"]) || !ok && scalarOf(t, mout["traceparent"]) != traceparent {
			t.Fatalf("_meta %s: traceparent %s, the request's %s", pout["_meta"], mout["traceparent"], own)
		}
		if p := EditParams(in["params"], edit); !bytes.Equal(p, got["params"]) {
			t.Fatalf("EditParams(%s) = %s, EditRequest's params %s", in["params"], p, got["params"])
		}
	})
}

// object decodes raw, a JSON object, null or nothing.
func object(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	m := map[string]json.RawMessage{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
	return m
}

// sameExcept fails unless a and b have the same members, byte for byte,
// but those of the keys given, which b may have and a not.
func sameExcept(t *testing.T, what string, a, b map[string]json.RawMessage, keys ...string) {
	t.Helper()
	a, b = maps.Clone(a), maps.Clone(b)
	for _, k := range keys {
		delete(a, k)
		delete(b, k)
	}
	if len(a) != len(b) || !maps.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) }) {
		t.Fatalf("%s changed beyond %q:\n%s\n%s", what, keys, a, b)
	}
}

func scalarOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	return scalar(raw)
}

// BenchmarkEditRequest is the observers' edit of a tools/call as mcp-go
// writes it: two trace context entries spliced into params._meta.
func BenchmarkEditRequest(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"increment","arguments":{"by":1,"note":"a short argument of a few words"}}}`)
	meta := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "a=b"}
	b.ReportAllocs()
	for b.Loop() {
		if out, _ := addMeta(body, meta); out == nil {
			b.Fatal("no edit")
		}
	}
}
