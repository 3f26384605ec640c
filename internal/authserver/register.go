package authserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// maxBody bounds request bodies; test requests are tiny.
const maxBody = 1 << 20

// serveMetadata answers RFC 8414 authorization server metadata.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if s.refuseIfDown(w) {
		return
	}
	issuer := s.url
	if s.cfg.MetadataIssuer != "" {
		issuer = s.cfg.MetadataIssuer
	}
	m := map[string]any{
		"issuer": issuer,
		"authorization_response_iss_parameter_supported": !s.cfg.NoIssParameter,
		"authorization_endpoint":                         s.url + "/authorize",
		"token_endpoint":                                 s.url + "/token",
		"registration_endpoint":                          s.url + "/register",
		"revocation_endpoint":                            s.url + "/revoke",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          append(slices.Clone(grantTypes), grantJWTBearer, grantTokenExchange),
		"token_endpoint_auth_methods_supported":          authMethods,
		"code_challenge_methods_supported":               []string{"S256"},
		"scopes_supported":                               s.cfg.ScopesSupported,
	}
	if s.cfg.DPoP {
		m["dpop_signing_alg_values_supported"] = dpopAlgs
	}
	writeJSON(w, http.StatusOK, m)
}

var (
	authMethods = []string{"none", "client_secret_basic", "client_secret_post"}
	grantTypes  = []string{"authorization_code", "refresh_token", "client_credentials"}
)

// registration is the client metadata of RFC 7591 §2 this server knows.
type registration struct {
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// registered is the RFC 7591 §3.2.1 answer.
type registered struct {
	ClientID              string `json:"client_id"`
	ClientSecret          string `json:"client_secret,omitempty"`
	ClientIDIssuedAt      int64  `json:"client_id_issued_at"`
	ClientSecretExpiresAt *int64 `json:"client_secret_expires_at,omitempty"` // required with a secret
	registration
}

// serveRegister is dynamic client registration (RFC 7591). grant_types is
// recorded and echoed but only client_credentials is enforced, through the
// requirement of a secret.
func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	if s.refuseIfDown(w) {
		return
	}
	var reg registration
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&reg); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "body is not client metadata JSON")
		return
	}
	// Defaults per RFC 7591 §2.
	if reg.TokenEndpointAuthMethod == "" {
		reg.TokenEndpointAuthMethod = "client_secret_basic"
	}
	if reg.GrantTypes == nil {
		reg.GrantTypes = []string{"authorization_code"}
	}
	if reg.ResponseTypes == nil {
		reg.ResponseTypes = []string{"code"}
	}
	if code, desc := checkRegistration(reg); code != "" {
		writeError(w, http.StatusBadRequest, code, desc)
		return
	}
	c := &client{
		id:           randomString(16),
		authMethod:   reg.TokenEndpointAuthMethod,
		redirectURIs: slices.Clone(reg.RedirectURIs),
	}
	out := registered{ClientID: c.id, ClientIDIssuedAt: time.Now().Unix(), registration: reg}
	if c.authMethod != "none" {
		c.secret = randomString(32)
		never := int64(0)
		out.ClientSecret, out.ClientSecretExpiresAt = c.secret, &never
	}
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
	s.stats.registrations.Add(1)
	writeJSON(w, http.StatusCreated, out)
}

// checkRegistration returns an RFC 7591 §3.2.2 error code and description
// for invalid metadata, "" if it is acceptable.
func checkRegistration(reg registration) (code, desc string) {
	if len(reg.RedirectURIs) == 0 {
		return "invalid_redirect_uri", "redirect_uris is required"
	}
	for _, ru := range reg.RedirectURIs {
		u, err := url.Parse(ru)
		if err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" {
			return "invalid_redirect_uri", "redirect URIs must be absolute, without a fragment"
		}
	}
	if !slices.Contains(authMethods, reg.TokenEndpointAuthMethod) {
		return "invalid_client_metadata", "unsupported token_endpoint_auth_method"
	}
	if !subset(reg.GrantTypes, grantTypes) {
		return "invalid_client_metadata", "unsupported grant type"
	}
	if reg.TokenEndpointAuthMethod == "none" && slices.Contains(reg.GrantTypes, "client_credentials") {
		return "invalid_client_metadata", "client_credentials needs a confidential client"
	}
	if !subset(reg.ResponseTypes, []string{"code"}) {
		return "invalid_client_metadata", "only response type code is supported"
	}
	return "", ""
}

// writeJSON answers v as JSON, never cached: answers carry tokens or secrets.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers an OAuth error (RFC 6749 §5.2).
func writeError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}
