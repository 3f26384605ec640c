package client

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
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

// wrap puts next beneath an observedTransport, if there are observers.
func (o *observers) wrap(next http.RoundTripper) http.RoundTripper {
	if o == nil {
		return next
	}
	return &observedTransport{next: next, o: o}
}

func (t *observedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct := traceOf(req.Context())
	if ct == nil {
		return t.next.RoundTrip(req)
	}
	if req.Method == http.MethodPost && len(t.o.meta) > 0 {
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
	meta := make(map[string]string, 3)
	for _, mp := range t.o.meta {
		mp.InjectMeta(req.Context(), meta)
	}
	if len(meta) == 0 || req.GetBody == nil {
		return req
	}
	rc, err := req.GetBody()
	if err != nil {
		return req
	}
	body, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return req
	}
	out, id := withMeta(body, meta)
	if id != "" {
		ct.sentRequest(id)
	}
	if out == nil {
		return req
	}
	if req.Body != nil {
		req.Body.Close() // a RoundTripper closes the body it was given, even one it replaces
	}
	r := new(http.Request)
	*r = *req
	r.Body = io.NopCloser(bytes.NewReader(out)) // in memory: net/http writes it with the headers
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	r.ContentLength = int64(len(out))
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
	top, ok := members(body)
	if !ok {
		return nil, ""
	}
	var method, params *member
	for i := range top {
		switch m := &top[i]; m.key {
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
		i := slices.IndexFunc(ps, func(m member) bool { return m.key == "_meta" })
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
		if slices.ContainsFunc(have, func(m member) bool { return m.key == k }) {
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

// member is one member of a JSON object: its key, and where its value lies
// in the object's bytes.
type member struct {
	key        string
	start, end int
}

// members lists the members of the JSON object obj (its bytes from its
// '{' to its '}', with no other value after it). ok is false if obj is not
// one well-formed object.
func members(obj []byte) (ms []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		ms = append(ms, member{key: key, start: end - len(raw), end: end})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // something after the object
	}
	return ms, true
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
