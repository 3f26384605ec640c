package observers

import (
	"maps"
	"net/http"
	"slices"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// The observers' layer of the HTTP chain (wire.Chain, 4): beneath the
// token layer (so that a resend after a 401 carries its own attempt's
// context) and above the user's transport (so that an instrumented one
// sees what goes out). For each request of a call's attempt it asks the
// MetaPropagators what to carry in params._meta (SEP-414), and notes the
// HTTP version of the answer. Requests outside calls (probes, dials, the
// token layer's own) pass untouched.

// Layer is the observers' hook in the HTTP chain, if there are
// MetaPropagators: other observers are not told the HTTP version
// (AttemptEnd.NetworkProtocolVersion), and their calls pay for no layer.
func (o *Set) Layer() wire.Observer {
	if o == nil || len(o.meta) == 0 {
		return nil
	}
	return o
}

// Outgoing is wire.Observer's: req with the propagators' _meta, and the
// call's trace to tell of the answer.
func (o *Set) Outgoing(req *http.Request) (*http.Request, wire.Answered) {
	ct := traceOf(req.Context())
	if ct == nil {
		return req, nil
	}
	if req.Method == http.MethodPost {
		req = o.inject(req, ct)
	}
	return req, ct
}

// inject returns req carrying what the MetaPropagators set, or req itself
// when they set nothing or its body is not a message that can carry it.
func (o *Set) inject(req *http.Request, ct *Trace) *http.Request {
	var meta map[string]string
	for _, mp := range o.meta {
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
	body := wire.RequestBody(req)
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
	return wire.WithBody(req, out)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
