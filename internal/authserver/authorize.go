package authserver

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// serveAuthorize is the authorization endpoint. There is no user: a valid
// request is approved at once (or refused, see SetDeny) and redirected.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if s.refuseIfDown(w) {
		return
	}
	q := r.URL.Query()
	clientID, redirectURI := q.Get("client_id"), q.Get("redirect_uri")
	s.mu.Lock()
	c := s.clients[clientID]
	s.mu.Unlock()
	// Until the redirect URI is known to be the client's, redirecting would
	// make this an open redirector (RFC 6749 §4.1.2.1): show a page instead.
	if c == nil {
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	target, err := url.Parse(redirectURI)
	if err != nil || !c.allowsRedirect(redirectURI, target) {
		http.Error(w, "redirect_uri is not registered for this client", http.StatusBadRequest)
		return
	}

	state := q.Get("state")
	answer := func(params url.Values) {
		if !s.cfg.NoIssParameter {
			params.Set("iss", s.url) // RFC 9207: who answers, against a mix-up
		}
		redirect(w, r, target, params, state)
	}
	fail := func(code, desc string) {
		answer(url.Values{"error": {code}, "error_description": {desc}})
	}
	scope := strings.Fields(q.Get("scope"))
	resource := q.Get("resource")
	s.mu.Lock()
	protected := s.protectsLocked(resource)
	s.mu.Unlock()
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "response_type must be code")
	case state == "":
		fail("invalid_request", "state is required")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE with code_challenge_method S256 is required")
	case !protected:
		fail("invalid_target", "resource is not a resource this server protects")
	case !subset(scope, s.cfg.ScopesSupported):
		fail("invalid_scope", "unsupported scope")
	case s.deny.Load():
		fail("access_denied", "the user declined")
	default:
		code := randomString(32)
		s.mu.Lock()
		s.codes[code] = &authCode{
			clientID:    c.id,
			redirectURI: redirectURI,
			challenge:   q.Get("code_challenge"),
			resource:    resource,
			scope:       scope,
			expires:     time.Now().Add(codeLifetime),
		}
		s.mu.Unlock()
		s.stats.authorizations.Add(1)
		answer(url.Values{"code": {code}})
	}
}

// allowsRedirect reports whether the client may be redirected to raw
// (parsed as u): one of its registered URIs exactly, or for the
// pre-registered client any http URI on a loopback host.
func (c *client) allowsRedirect(raw string, u *url.URL) bool {
	if c.preRegistered {
		host := u.Hostname()
		return u.Scheme == "http" && (host == "127.0.0.1" || host == "localhost") && u.Fragment == ""
	}
	return slices.Contains(c.redirectURIs, raw)
}

// redirect sends the user agent back to target with params (and state, if
// any) added to target's own query.
func redirect(w http.ResponseWriter, r *http.Request, target *url.URL, params url.Values, state string) {
	u := *target
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if state != "" {
		q.Set("state", state)
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusFound)
}
