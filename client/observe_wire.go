package client

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// observedTransport is the RoundTripper of a client with observers,
// beneath the token layer (so that a resend after a 401 carries its own
// attempt's context) and above the user's transport (so that an
// instrumented one sees what goes out): for each request of a call's
// attempt it asks the MetaPropagators what to carry in params._meta
// (SEP-414), and notes the HTTP version of the answer. Requests outside
// calls (probes, dials, the token layer's own) pass untouched.
//
// An observedTransport is safe for concurrent use.
type observedTransport struct {
	next http.RoundTripper
	o    *observers
}

// wrap puts next beneath an observedTransport, if there are
// MetaPropagators: other observers are not told the HTTP version
// (AttemptEnd.NetworkProtocolVersion), and their calls pay for no layer.
func (o *observers) wrap(next http.RoundTripper) http.RoundTripper {
	if o == nil || len(o.meta) == 0 {
		return next
	}
	return &observedTransport{next: next, o: o}
}

func (t *observedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct := traceOf(req.Context())
	if ct == nil {
		return t.next.RoundTrip(req)
	}
	if req.Method == http.MethodPost {
		req = t.inject(req, ct)
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		ct.sawResponse(resp.ProtoMajor, resp.ProtoMinor)
	}
	return resp, err
}

// inject returns req carrying what the MetaPropagators set, or req itself
// when they set nothing or its body is not a message that can carry it.
func (t *observedTransport) inject(req *http.Request, ct *callTrace) *http.Request {
	var meta map[string]string
	for _, mp := range t.o.meta {
		switch m := mp.InjectMeta(req.Context()); {
		case len(m) == 0:
		case meta == nil:
			meta = m
		default:
			meta = maps.Clone(meta) // not the first one's to change
			maps.Copy(meta, m)
		}
	}
	if len(meta) == 0 {
		return req
	}
	body := requestBody(req)
	if body == nil {
		return req
	}
	out, id := withMeta(body, meta)
	if id != "" {
		ct.sentRequest(id)
	}
	if out == nil {
		return req
	}
	return withBody(req, out)
}

// requestBody is a copy of req's body, read through GetBody (mcp-go's are
// in memory); nil if it cannot be had.
func requestBody(req *http.Request) []byte {
	if req.GetBody == nil {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		return nil
	}
	return body
}

// withBody returns a copy of req that sends body instead of its own.
func withBody(req *http.Request, body []byte) *http.Request {
	if req.Body != nil {
		req.Body.Close() // a RoundTripper closes the body it was given, even one it replaces
	}
	r := new(http.Request)
	*r = *req
	r.Body = io.NopCloser(bytes.NewReader(body)) // in memory: net/http writes it with the headers
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return r
}

func (t *observedTransport) CloseIdleConnections() {
	if ci, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// withMeta returns the JSON-RPC message body with meta's entries added to
// its params._meta, keeping every byte it had in place (mcp-go's field
// order, the request's own _meta entries, which win over meta's), and the
// message's id ("" for a notification). It returns nil for a body that is
// not one JSON-RPC request or notification whose params can carry _meta (a
// batch, a response, params that are an array, a _meta that is not an
// object), or that gains nothing.
func withMeta(body []byte, meta map[string]string) (out []byte, id string) {
	if !json.Valid(body) {
		return nil, ""
	}
	top, ok := members(body)
	if !ok {
		return nil, ""
	}
	var method, params *member
	for i := range top {
		switch m := &top[i]; string(m.key) {
		case "method":
			method = m
		case "params":
			params = m
		case "id":
			id = scalar(body[m.start:m.end])
		}
	}
	if method == nil {
		return nil, id
	}
	// body[from:to] is replaced with prefix, the entries and suffix: an
	// insertion where from == to.
	var from, to int
	var prefix, suffix string
	var have []member // the entries of the request's own _meta
	switch {
	case params == nil:
		// Before the message's closing '}'; only whitespace follows it.
		from = bytes.LastIndexByte(body, '}')
		prefix, suffix = `"params":{"_meta":{`, `}}`
		if len(top) > 0 {
			prefix = "," + prefix
		}
	case string(body[params.start:params.end]) == "null":
		from, to = params.start, params.end
		prefix, suffix = `{"_meta":{`, `}}`
	case body[params.start] == '{':
		obj := body[params.start:params.end]
		ps, _ := members(obj)
		// The last: a decoder takes the last of duplicate keys.
		i := lastIndex(ps, "_meta")
		switch {
		case i < 0:
			from = params.start + 1
			prefix, suffix = `"_meta":{`, `}`
			if len(ps) > 0 {
				suffix += ","
			}
		case obj[ps[i].start] == '{':
			have, _ = members(obj[ps[i].start:ps[i].end])
			from = params.start + ps[i].start + 1
			if len(have) > 0 {
				suffix = ","
			}
		default:
			return nil, id // a _meta that is not an object is left alone
		}
	default:
		return nil, id // params by position carry no _meta
	}
	if to < from {
		to = from
	}
	var entries []byte
	for _, k := range sortedKeys(meta) {
		if slices.ContainsFunc(have, func(m member) bool { return string(m.key) == k }) {
			continue // the request's own
		}
		if len(entries) > 0 {
			entries = append(entries, ',')
		}
		entries = appendJSONString(entries, k)
		entries = append(entries, ':')
		entries = appendJSONString(entries, meta[k])
	}
	if len(entries) == 0 {
		return nil, id
	}
	out = make([]byte, 0, len(body)+len(prefix)+len(entries)+len(suffix))
	out = append(out, body[:from]...)
	out = append(append(append(out, prefix...), entries...), suffix...)
	return append(out, body[to:]...), id
}

// member is one member of a JSON object: its key as written between the
// quotes (members refuses keys with escapes, which mcp-go never writes),
// and where its value lies in the object's bytes.
type member struct {
	key        []byte
	start, end int
}

// members lists the members of the JSON object obj, with only whitespace
// around it; ok is false if obj is not one. obj must be valid JSON
// (json.Valid). The wire package walks the bytes (wire.Members), as its
// guard walks every answer.
func members(obj []byte) (ms []member, ok bool) {
	ms = make([]member, 0, 8) // one allocation for a JSON-RPC message's members, or its params'
	if !wire.Members(obj, func(key []byte, start, end int) {
		ms = append(ms, member{key: key, start: start, end: end})
	}) {
		return nil, false
	}
	return ms, true
}

// lastIndex is the index of the last member with key, -1 if none.
func lastIndex(ms []member, key string) int {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].key) == key {
			return i
		}
	}
	return -1
}

// scalar is a JSON-RPC id as text: a number as written, a string
// unquoted; "" for null or anything else.
func scalar(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case c == '-' || c >= '0' && c <= '9':
		return string(raw)
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
