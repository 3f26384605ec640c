package client

import (
	"bytes"
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
	// The propagators' entries in params._meta, sorted (the same bytes
	// for the same context); the request's own entries win.
	keys := sortedKeys(meta)
	out, id := wire.EditRequest(body, func(e *wire.Edit) {
		for _, k := range keys {
			if _, own := e.Meta(k); !own {
				e.SetMetaString(k, meta[k])
			}
		}
	})
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

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
