package authserver

import (
	"net/http"
	"net/url"
	"strings"
)

// prmPrefix is where RFC 9728 puts protected resource metadata.
const prmPrefix = "/.well-known/oauth-protected-resource"

// Protect guards next, the resource server serving resource (such as
// "http://127.0.0.1:5555/mcp"), with access tokens this server issued for
// that resource. The returned handler is meant to be mounted at "/" of the
// resource server's origin:
//
//   - GET prmPrefix and GET prmPrefix+<path of resource> answer the
//     protected resource metadata (RFC 9728) naming this server;
//   - any other request without a valid "Authorization: Bearer" token
//     bound to resource gets 401 with a WWW-Authenticate challenge carrying
//     resource_metadata (and error="invalid_token" if a token was sent);
//   - a token bound to a DPoP key (Config.DPoP) must come with the DPoP
//     scheme and a valid proof, else 401 invalid_dpop_proof (or
//     use_dpop_nonce, with Config.DPoPNonce);
//   - a valid token lacking a scope of RequireScopes gets 403
//     insufficient_scope.
//
// Tokens are checked even while SetDown is in effect or after Close, as a
// resource server validating tokens locally would. Protect registers
// resource as a valid RFC 8707 target; calling it again for the same
// resource is fine (testserver calls a Guard once per generation). It panics
// if resource is not an absolute URL. Protect and the returned handler are
// safe for concurrent use.
func (s *Server) Protect(resource string, next http.Handler) http.Handler {
	u, err := url.Parse(resource)
	if err != nil || !u.IsAbs() || u.Host == "" {
		panic("authserver: Protect: resource is not an absolute URL: " + resource)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	s.mu.Lock()
	s.resources[resource] = true
	s.mu.Unlock()
	return &guard{
		s:           s,
		resource:    resource,
		metadataURL: u.Scheme + "://" + u.Host + prmPrefix + path,
		prmPath:     prmPrefix + path,
		next:        next,
	}
}

type guard struct {
	s           *Server
	resource    string
	metadataURL string
	prmPath     string
	next        http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.EscapedPath(); p == prmPrefix || p == g.prmPath {
		g.serveMetadata(w, r)
		return
	}
	scheme, token, sent := credentials(r)
	s := g.s
	s.mu.Lock()
	t := s.validLocked(token)
	if t != nil && t.grant.resource != g.resource {
		t = nil // a token for another audience is no token for this one
	}
	var missing bool
	if t != nil {
		missing = !subset(s.required, t.scope)
	}
	required := strings.Join(s.required, " ")
	s.mu.Unlock()

	challenge := `resource_metadata="` + g.metadataURL + `"`
	if t != nil && t.jkt == "" && !strings.EqualFold(scheme, "Bearer") {
		t = nil // a token bound to no key goes with the Bearer scheme
	}
	switch {
	case t == nil:
		if sent {
			challenge += `, error="invalid_token"`
		}
		s.stats.refused401.Add(1)
		w.Header().Set("WWW-Authenticate", "Bearer "+challenge)
		if s.cfg.DPoP {
			w.Header().Add("WWW-Authenticate", `DPoP algs="`+strings.Join(dpopAlgs, " ")+`"`)
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	case t.jkt != "" && !g.resourceProof(w, r, scheme, token, t):
		// refused, and answered, for its proof
	case missing:
		s.stats.refused403.Add(1)
		w.Header().Set("WWW-Authenticate",
			`Bearer error="insufficient_scope", scope="`+required+`", `+challenge)
		http.Error(w, "insufficient scope", http.StatusForbidden)
	default:
		g.next.ServeHTTP(w, r)
	}
}

func (g *guard) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 g.resource,
		"authorization_servers":    []string{g.s.url},
		"scopes_supported":         g.s.cfg.ScopesSupported,
		"bearer_methods_supported": []string{"header"},
	})
}

// credentials returns the scheme and token of an "Authorization: Bearer"
// or "Authorization: DPoP" header, and whether one was sent at all;
// another scheme counts as no token (RFC 6750 §3.1: no error code then).
func credentials(r *http.Request) (scheme, token string, sent bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !(strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "DPoP")) {
		return "", "", false
	}
	return scheme, strings.TrimSpace(token), true
}
