package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// refMembers is what encoding/json reads of the members of obj: each key
// (unescaped) and its value, compacted, and whether a key was written with
// an escape. ok is false if obj is not a JSON object.
func refMembers(obj []byte) (keys []string, values []string, escapedKey, ok bool) {
	if !json.Valid(obj) {
		return nil, nil, false, false
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false, false
	}
	for dec.More() {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false, false
		}
		// Between the last value and the end of the key: a comma,
		// whitespace and the key as written.
		escapedKey = escapedKey || bytes.IndexByte(obj[before:dec.InputOffset()], '\\') >= 0
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, false, false
		}
		keys = append(keys, tok.(string))
		values = append(values, compact(raw))
	}
	return keys, values, escapedKey, true
}

func compact(b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return "invalid: " + string(b)
	}
	return out.String()
}

// checkMembers holds Members to encoding/json on obj, valid JSON.
func checkMembers(t *testing.T, obj []byte) {
	t.Helper()
	var keys, values []string
	ok := Members(obj, func(key []byte, start, end int) {
		// As encoding/json reads it: invalid UTF-8 becomes U+FFFD.
		var k string
		if err := json.Unmarshal([]byte(`"`+string(key)+`"`), &k); err != nil {
			k = "invalid: " + string(key)
		}
		keys = append(keys, k)
		values = append(values, compact(obj[start:end]))
	})
	wantKeys, wantValues, escaped, isObject := refMembers(obj)
	switch {
	case !isObject:
		if ok {
			t.Fatalf("Members(%q) = true for what is not an object", obj)
		}
	case escaped:
		if ok {
			t.Fatalf("Members(%q) = true for an object with a key written with escapes", obj)
		}
	case !ok:
		t.Fatalf("Members(%q) = false for an object", obj)
	case strings.Join(keys, "\x00") != strings.Join(wantKeys, "\x00"):
		t.Fatalf("Members(%q): keys %q, want %q", obj, keys, wantKeys)
	case strings.Join(values, "\x00") != strings.Join(wantValues, "\x00"):
		t.Fatalf("Members(%q): values %q, want %q", obj, values, wantValues)
	}
}

func TestMembers(t *testing.T) {
	for _, obj := range []string{
		`{}`,
		` { } `,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"a":"}{\"","b":[1,{"c":"]"}],"d":null,"e":-1.5e3,"f":true}`,
		"{\n\t\"params\" : { \"_meta\" : { \"progressToken\" : \"x\" } } \n}",
		`{"text":"` + strings.Repeat(`\"{[`, 100) + `","more":{"deep":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}}`,
		`{"k\u0041":1}`, // a key written with an escape: refused
		`[1,2]`,
		`"x"`,
		`{"a":1}{"b":2}`,
	} {
		checkMembers(t, []byte(obj))
	}
}

// FuzzMembers: on any valid JSON, Members finds the members encoding/json
// finds, or refuses a key written with escapes.
func FuzzMembers(f *testing.F) {
	for _, seed := range jsonSeeds {
		f.Add([]byte(seed))
	}
	f.Add([]byte(`{"a":[{"b":"\\\"}"}],"c":{}}`))
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) {
			return // Members' contract: its callers check first
		}
		checkMembers(t, obj)
	})
}
