// Package origin compares URLs by origin (scheme, host and port), for the
// layers that must not send a secret to another one: auth's token layer
// and discovery, and the client's redirect check (client/internal/wire),
// which may not import auth for it. auth.SameOrigin is its public face.
package origin

import (
	"net/url"
	"strings"
)

// Same reports whether a and b have the same scheme, host and port (the
// port a scheme implies when none is given).
func Same(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		Port(a) == Port(b)
}

// Port is u's port, or the one its scheme implies (443 for https, 80 for
// http); "" for another scheme without one.
func Port(u *url.URL) string {
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
