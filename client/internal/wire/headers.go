package wire

import "net/http"

// WithHeaders returns next with headers added to each request that lacks
// them. mcp-go puts a client's headers on most requests itself, but not on
// every one: v1.2.1's StreamableHTTP.Close builds the session's DELETE
// without them, and a server (or a gateway before it) that wants its header
// on every request refuses that DELETE, leaving the session open there. A
// request that carries them already goes through as it is, with nothing
// copied; nor does a redirect that left the origin, stripped of them
// above (redirect.go). With no headers it returns next.
func WithHeaders(next http.RoundTripper, headers map[string]string) http.RoundTripper {
	if len(headers) == 0 {
		return next
	}
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	return headerLayer{next: next, headers: h}
}

type headerLayer struct {
	next    http.RoundTripper
	headers http.Header
}

func (l headerLayer) RoundTrip(req *http.Request) (*http.Response, error) {
	if leftOrigin(req) {
		// A redirect to another origin: the tracker above stripped the
		// headers that say who sends it (redirect.go), and they are not
		// put back.
		return l.next.RoundTrip(req)
	}
	for k := range l.headers {
		if _, ok := req.Header[k]; !ok {
			// A RoundTripper must not change its request: the copy gets them.
			req = req.Clone(req.Context())
			for k, v := range l.headers {
				if _, ok := req.Header[k]; !ok {
					req.Header[k] = v
				}
			}
			break
		}
	}
	return l.next.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach next.
func (l headerLayer) CloseIdleConnections() {
	if ci, ok := l.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
