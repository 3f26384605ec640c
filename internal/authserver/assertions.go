package authserver

import (
	"crypto/ecdsa"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Enterprise-managed authorization and workload identity. A Server plays
// either side, and tests start two: the enterprise's identity provider
// (it issues ID tokens, and ID-JAGs for them through the RFC 8693 token
// exchange) or the workload's platform (it issues workload assertions);
// and the MCP server's authorization server, which takes those JWTs in the
// RFC 7523 JWT bearer grant from the issuers in Config.TrustedIssuers.

const (
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	typIDJAG           = "oauth-id-jag+jwt"
)

// defaultJAGLifetime is an ID-JAG's lifetime for the zero Config.
const defaultJAGLifetime = 5 * time.Minute

// IDToken returns an ID token this server (as the enterprise's identity
// provider) issued to subject for the client audience (its client ID
// here), valid for lifetime: what the user's single sign-on gave the
// agent. It is safe for concurrent use.
func (s *Server) IDToken(subject, audience string, lifetime time.Duration) string {
	return s.mint("JWT", subject, audience, lifetime, nil)
}

// WorkloadAssertion returns a JWT this server (as a workload's platform)
// issued for subject, addressed to audience (the authorization server's
// issuer), valid for lifetime. A negative lifetime gives one already
// expired. It is safe for concurrent use.
func (s *Server) WorkloadAssertion(subject, audience string, lifetime time.Duration) string {
	return s.mint("JWT", subject, audience, lifetime, nil)
}

// AssertionSubjects returns the subjects of the JWTs accepted by the JWT
// bearer grant so far, in order. It is safe for concurrent use.
func (s *Server) AssertionSubjects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.subjects)
}

func (s *Server) mint(typ, subject, audience string, lifetime time.Duration, extra map[string]any) string {
	now := time.Now()
	claims := map[string]any{
		"iss": s.url, "sub": subject, "aud": audience, "jti": randomString(12),
		"iat": now.Unix(), "exp": now.Add(lifetime).Unix(),
	}
	for k, v := range extra {
		claims[k] = v
	}
	return signJWT(s.key, typ, claims)
}

// tokenExchange is the identity provider's RFC 8693 token exchange: an ID
// token it issued to the requesting client, for an ID-JAG naming the
// audience (an authorization server) and resource asked for, and the
// client ID there (Config.JAGClientID).
func (s *Server) tokenExchange(c *client, form url.Values) (tokenResponse, *oauthError) {
	switch {
	case form.Get("requested_token_type") != tokenTypeIDJAG:
		return tokenResponse{}, badRequest("invalid_request", "requested_token_type must be an ID-JAG")
	case form.Get("subject_token_type") != tokenTypeIDToken:
		return tokenResponse{}, badRequest("invalid_request", "subject_token_type must be an ID token")
	case form.Get("audience") == "" || form.Get("resource") == "":
		return tokenResponse{}, badRequest("invalid_request", "audience and resource are required")
	}
	idt, err := parseJWT(form.Get("subject_token"))
	switch {
	case err != nil || !idt.verify(&s.key.PublicKey) || idt.str("iss") != s.url:
		return tokenResponse{}, badRequest("invalid_grant", "the subject token is not an ID token of this server")
	case idt.str("aud") != c.id:
		return tokenResponse{}, badRequest("invalid_grant", "the ID token was issued to another client")
	case time.Now().Unix() >= idt.num("exp"):
		return tokenResponse{}, badRequest("invalid_grant", "the ID token is expired")
	}
	clientID := s.cfg.JAGClientID
	if clientID == "" {
		clientID = c.id
	}
	extra := map[string]any{"resource": form.Get("resource"), "client_id": clientID}
	if sc := form.Get("scope"); sc != "" {
		extra["scope"] = sc
	}
	life := s.cfg.JAGLifetime
	jag := s.mint(typIDJAG, idt.str("sub"), form.Get("audience"), life, extra)
	s.stats.tokenExchanges.Add(1)
	return tokenResponse{
		AccessToken: jag, TokenType: "N_A", IssuedTokenType: tokenTypeIDJAG,
		ExpiresIn: int64((life + time.Second - 1) / time.Second), Scope: form.Get("scope"),
	}, nil
}

// jwtBearer is the RFC 7523 JWT bearer grant: a JWT from a trusted issuer,
// addressed to this server, not expired. An ID-JAG must name the
// authenticated client and carries the resource (and may bound the
// scope); a workload assertion takes the resource parameter. As the
// ID-JAG draft advises, no refresh token: the client presents the grant
// again. The token is bound to the DPoP key jkt, if not "".
func (s *Server) jwtBearer(c *client, form url.Values, jkt string) (tokenResponse, *oauthError) {
	a := form.Get("assertion")
	if a == "" {
		return tokenResponse{}, badRequest("invalid_request", "assertion is required")
	}
	p, err := parseJWT(a)
	if err != nil {
		return tokenResponse{}, badRequest("invalid_grant", "the assertion is not a JWT: "+err.Error())
	}
	var issuer *ecdsa.PublicKey
	for _, t := range s.cfg.TrustedIssuers {
		if t.url == p.str("iss") {
			issuer = &t.key.PublicKey
		}
	}
	switch {
	case issuer == nil || !p.verify(issuer):
		return tokenResponse{}, badRequest("invalid_grant", "the assertion's issuer is not trusted, or its signature does not verify")
	case !addressedTo(p.claims["aud"], s.url):
		return tokenResponse{}, badRequest("invalid_grant", "the assertion is addressed to another audience")
	case time.Now().Unix() >= p.num("exp"):
		return tokenResponse{}, badRequest("invalid_grant", "the assertion is expired")
	}
	scope := strings.Fields(form.Get("scope"))
	resource := form.Get("resource")
	if p.typ == typIDJAG {
		granted := strings.Fields(p.str("scope"))
		switch {
		case p.str("client_id") != c.id:
			return tokenResponse{}, badRequest("invalid_grant", "the ID-JAG names another client")
		case resource != "" && resource != p.str("resource"):
			return tokenResponse{}, badRequest("invalid_target", "resource differs from the ID-JAG's")
		case p.str("scope") != "" && !subset(scope, granted):
			return tokenResponse{}, badRequest("invalid_scope", "scope exceeds the ID-JAG's")
		}
		resource = p.str("resource")
		if len(scope) == 0 {
			scope = granted
		}
	}
	if !subset(scope, s.cfg.ScopesSupported) {
		return tokenResponse{}, badRequest("invalid_scope", "unsupported scope")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if resource != "" && !s.protectsLocked(resource) {
		return tokenResponse{}, badRequest("invalid_target", "resource is not a resource this server protects")
	}
	if s.cfg.SingleUseAssertions && s.jtis[p.str("jti")] {
		return tokenResponse{}, badRequest("invalid_grant", "the assertion was used before")
	}
	s.jtis[p.str("jti")] = true
	s.subjects = append(s.subjects, p.str("sub"))
	s.stats.jwtBearerGrants.Add(1)
	return s.issueLocked(&grant{clientID: c.id, resource: resource, scope: scope}, scope, false, jkt), nil
}

// addressedTo reports whether an aud claim (a string or an array) names
// issuer, with or without a trailing slash.
func addressedTo(aud any, issuer string) bool {
	match := func(v any) bool {
		s, _ := v.(string)
		return s != "" && strings.TrimSuffix(s, "/") == issuer
	}
	if l, ok := aud.([]any); ok {
		return slices.ContainsFunc(l, match)
	}
	return match(aud)
}
