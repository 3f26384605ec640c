package wire

import (
	"net/http"

	"github.com/resilientmcp/resilientmcp/internal/origin"
)

// Nothing secret leaves the origin the client was given. http.Client copies
// every header of the first request to each redirect, and strips
// Authorization and Cookie only when the host name changes, not when the
// port or the scheme does; the headers of WithHeaders and WithHeaderFunc
// (an API key, a token) and the session id go along in every case.
//
// The check is made in the tracker, per request, rather than in
// CheckRedirect: it then holds whatever CheckRedirect a user's http.Client
// has, and also strips a header that a RoundTripper wrapping the tracker
// adds (an authorization layer's token). A RoundTripper the tracker wraps
// sees the request after it, and must check the origin itself.

// withoutCredentials is the request of a redirect, stripped of every header
// that may say who sends it if it leaves the origin (scheme, host and port)
// of the request the chain began with.
func withoutCredentials(req *http.Request) *http.Request {
	if !leftOrigin(req) {
		return req
	}
	r := req.Clone(req.Context())
	for k := range r.Header {
		if !portableHeader(http.CanonicalHeaderKey(k)) {
			delete(r.Header, k)
		}
	}
	return r
}

// leftOrigin reports whether req is a redirect that left the origin
// (scheme, host and port) of the request its chain began with.
func leftOrigin(req *http.Request) bool {
	first := req
	for first.Response != nil && first.Response.Request != nil && first.Response.Request != first {
		first = first.Response.Request
	}
	return !origin.Same(first.URL, req.URL)
}

// portableHeader reports whether a header may follow a request to another
// origin: it describes the request, not who sends it.
func portableHeader(k string) bool {
	switch k {
	case "Accept", "Content-Type", "User-Agent", "Last-Event-Id",
		"Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name":
		return true
	}
	return false
}
