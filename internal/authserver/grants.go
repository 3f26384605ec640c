package authserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"strings"
	"time"
)

// exchangeCode is the authorization_code grant. jkt is the thumbprint of
// the request's DPoP key, "" without DPoP: the tokens are bound to it, and
// a public client's refresh token too.
func (s *Server) exchangeCode(c *client, form url.Values, jkt string) (tokenResponse, *oauthError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ac := s.codes[form.Get("code")]
	switch {
	case ac == nil || ac.clientID != c.id:
		return tokenResponse{}, badRequest("invalid_grant", "unknown authorization code")
	case ac.used:
		// A replayed code may have been stolen: revoke what it issued.
		if ac.grant != nil {
			ac.grant.revoked = true
		}
		return tokenResponse{}, badRequest("invalid_grant", "authorization code already used")
	case !time.Now().Before(ac.expires):
		return tokenResponse{}, badRequest("invalid_grant", "authorization code expired")
	case form.Get("redirect_uri") != ac.redirectURI:
		return tokenResponse{}, badRequest("invalid_grant", "redirect_uri differs from the authorization request's")
	case !pkceMatches(form.Get("code_verifier"), ac.challenge):
		// The code is not consumed: the verifier proves who may use it,
		// and whoever sent a wrong one did not prove it.
		return tokenResponse{}, badRequest("invalid_grant", "code_verifier does not match code_challenge")
	case form.Has("resource") && form.Get("resource") != ac.resource:
		return tokenResponse{}, badRequest("invalid_target", "resource differs from the authorization request's")
	}
	ac.used = true
	ac.grant = &grant{clientID: c.id, resource: ac.resource, scope: ac.scope}
	if c.secret == "" {
		ac.grant.jkt = jkt
	}
	return s.issueLocked(ac.grant, ac.scope, true, jkt), nil
}

// refreshGrant is the refresh_token grant. Refresh tokens rotate: each is
// good for one refresh, and presenting a used one again revokes its whole
// grant (OAuth 2.1 §4.3.1). A refresh token bound to a DPoP key is taken
// only with a proof by that key (RFC 9449 §5).
func (s *Server) refreshGrant(c *client, form url.Values, jkt string) (tokenResponse, *oauthError) {
	scope := strings.Fields(form.Get("scope"))
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.refresh[form.Get("refresh_token")]
	switch {
	case rt == nil || rt.grant.clientID != c.id:
		return tokenResponse{}, badRequest("invalid_grant", "unknown refresh token")
	case rt.used:
		s.stats.reuseDetected.Add(1)
		rt.grant.revoked = true
		return tokenResponse{}, badRequest("invalid_grant", "refresh token reused; the grant is revoked")
	case rt.grant.revoked:
		return tokenResponse{}, badRequest("invalid_grant", "the grant is revoked")
	case rt.grant.jkt != "" && jkt != rt.grant.jkt:
		s.stats.dpopRefused.Add(1)
		return tokenResponse{}, badRequest("invalid_dpop_proof", "the refresh token is bound to another DPoP key")
	case !subset(scope, rt.grant.scope):
		return tokenResponse{}, badRequest("invalid_scope", "scope exceeds the grant's")
	case form.Has("resource") && form.Get("resource") != rt.grant.resource:
		return tokenResponse{}, badRequest("invalid_target", "resource differs from the grant's")
	}
	if len(scope) == 0 {
		scope = rt.grant.scope
	}
	rt.used = true
	s.stats.refreshes.Add(1)
	return s.issueLocked(rt.grant, scope, true, jkt), nil
}

// clientCredentials is the client_credentials grant, for confidential
// clients only. Without a resource parameter the token is bound to no
// resource, so Protect refuses it: MCP clients must send resource (RFC
// 8707), and real providers without a default audience behave alike.
func (s *Server) clientCredentials(c *client, form url.Values, jkt string) (tokenResponse, *oauthError) {
	scope := strings.Fields(form.Get("scope"))
	resource := form.Get("resource")
	if c.secret == "" {
		return tokenResponse{}, badRequest("unauthorized_client", "client_credentials needs a confidential client")
	}
	if !subset(scope, s.cfg.ScopesSupported) {
		return tokenResponse{}, badRequest("invalid_scope", "unsupported scope")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if resource != "" && !s.protectsLocked(resource) {
		return tokenResponse{}, badRequest("invalid_target", "resource is not a resource this server protects")
	}
	s.stats.clientCredentials.Add(1)
	g := &grant{clientID: c.id, resource: resource, scope: scope}
	// RFC 6749 §4.4.3: no refresh token; the client can just ask again.
	return s.issueLocked(g, scope, false, jkt), nil
}

// pkceMatches checks an RFC 7636 S256 code_verifier against its challenge.
func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}
