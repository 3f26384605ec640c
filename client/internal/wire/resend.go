package wire

import "net/http"

// Go's HTTP/2 transport sends a request again by itself, on the same
// connection or a new one, after RST_STREAM REFUSED_STREAM, RST_STREAM
// PROTOCOL_ERROR, or a GOAWAY that left its stream unprocessed, whenever it
// can rewind the body: when the request has GetBody, as every request of
// mcp-go's has (http.NewRequest sets it for a *bytes.Reader). A proxy refuses
// a stream it had already forwarded to a backend that died (HAProxy does), so
// a tools/call of a tool that is not safe to repeat ran twice, and the
// caller was told it succeeded. The client must decide every resend, so
// net/http is handed no GetBody on a request it may send over HTTP/2: it then
// fails the request instead, and says why in its message, which the policy
// reads (HTTP2Refusal).
//
// What net/http still does by itself is safe: an HTTP/2 request whose
// stream never opened (the connection was unusable) goes out on another
// connection with its body unread; HTTP/1 never resends a POST once a byte
// of it was written. HTTP/1 resends a POST that wrote nothing on a pooled
// connection only with GetBody; over https, where that connection may as
// well be HTTP/2, the client does it (IsPeerClosedBeforeWrite).

// withoutResend returns req as net/http's Transport is to get it: without
// GetBody if the request may go out over HTTP/2 (https, or h2c when the
// Transport speaks it). A copy: the request belongs to the layers above,
// and http.Client needs GetBody to follow a 307 or 308.
func withoutResend(req *http.Request, h2c bool) *http.Request {
	if req.GetBody == nil || req.URL.Scheme != "https" && !h2c {
		return req
	}
	r := *req
	r.GetBody = nil
	return &r
}

// speaksH2C reports whether t would speak HTTP/2 over plain TCP.
func speaksH2C(t *http.Transport) bool {
	return t.Protocols != nil && t.Protocols.UnencryptedHTTP2()
}

// NoResend is the layer just above a RoundTripper of the user's
// (WithHTTPClient) that keeps it from sending a request again by itself;
// see withoutResend. It is safe for concurrent use.
type NoResend struct{ Next http.RoundTripper }

// RoundTrip sends req through Next, without GetBody where HTTP/2 may
// carry it: over https, or over plain http if Next is a net/http
// Transport that speaks h2c. A RoundTripper of another kind is taken not
// to speak h2c, which few do: its layers may read GetBody over plain http
// (a recording layer does), and the h2c one would resend as it pleases.
func (n NoResend) RoundTrip(req *http.Request) (*http.Response, error) {
	var h2c bool
	if t, ok := n.Next.(*http.Transport); ok {
		h2c = speaksH2C(t)
	}
	return n.Next.RoundTrip(withoutResend(req, h2c))
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach Next.
func (n NoResend) CloseIdleConnections() {
	if ci, ok := n.Next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
