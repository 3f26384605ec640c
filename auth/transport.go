package auth

import (
	"net/http"
	"net/url"
	"strings"
)

// Transport adds the Source's token to every request for Origin, and when
// the server answers 401 to a token, asks the Source for another (once for
// every request refused with the same token) and sends the request again:
// a 401 means it did not run, so this is safe for any request. A request
// for another origin (scheme, host and port) is sent without a token.
//
// A Transport is safe for concurrent use.
type Transport struct {
	Base   http.RoundTripper
	Source *Source
	Origin *url.URL
}

// RoundTrip sends req with the token if it is for Origin, and once more
// with a replacement if the server answers 401. It fails with an *Error
// when no token, or no replacement, can be had.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !SameOrigin(req.URL, t.Origin) {
		return t.Base.RoundTrip(req)
	}
	token, err := t.Source.Token(req.Context())
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.Base.RoundTrip(withToken(req, token))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // cannot be sent again; the 401 is the answer
	}
	next, err := t.Source.Rejected(req.Context(), token)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	again := withToken(req, next)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		again.Body = body
	}
	resp.Body.Close()
	resp, err = t.Base.RoundTrip(again)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// Refused twice in a row, the second time with a token the
		// source just gave: asking again would loop.
		resp.Body.Close()
		return nil, &Error{Reason: ReasonTokenRejected}
	}
	return resp, err
}

// CloseIdleConnections passes on to Base, so that the HTTP client's
// CloseIdleConnections still reaches the connections.
func (t *Transport) CloseIdleConnections() {
	if ci, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func withToken(req *http.Request, token string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// SameOrigin reports whether a and b have the same scheme, host and port
// (the port a scheme implies when none is given).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
