package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
)

// discovery is where and how a protected resource is authorized: what
// RFC 9728 and RFC 8414 discovery found, or the 2025-03-26 defaults.
type discovery struct {
	resource        string   // the RFC 8707 resource indicator sent on every authorization and token request
	scopesSupported []string // the protected resource's, for scope selection
	as              serverMetadata
}

// serverMetadata is mcp-go's RFC 8414 type with the fields it lacks.
type serverMetadata struct {
	transport.AuthServerMetadata
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
	// AuthorizationResponseIssParameterSupported: the authorization
	// response always carries iss (RFC 9207 §3).
	AuthorizationResponseIssParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`

	// DPoPSigningAlgValuesSupported: the server takes DPoP proofs signed
	// with these (RFC 9449 §5.1).
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

// protectedResource is RFC 9728 metadata; mcp-go's type lacks
// scopes_supported.
type protectedResource struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
}

// maxMetadata bounds a metadata document: they are a few KiB.
const maxMetadata = 1 << 20

// discover finds endpoint's authorization server: the protected resource
// metadata from the challenge, then the path-based and the root well-known
// URL (RFC 9728); then its authorization server metadata (RFC 8414, then
// OpenID discovery, path variants). A server without protected resource
// metadata is its own authorization server (2025-03-26), and one without
// authorization server metadata has the default /authorize, /token and
// /register endpoints.
func discover(ctx context.Context, hc *http.Client, endpoint *url.URL, ch Challenge) (*discovery, error) {
	origin := &url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host}
	var candidates []string
	if ch.ResourceMetadata != "" {
		candidates = append(candidates, ch.ResourceMetadata)
	}
	if p := strings.TrimSuffix(endpoint.EscapedPath(), "/"); p != "" {
		candidates = append(candidates, origin.String()+"/.well-known/oauth-protected-resource"+p)
	}
	candidates = append(candidates, origin.String()+"/.well-known/oauth-protected-resource")

	d := &discovery{resource: canonicalResource(endpoint)}
	issuer := origin.String()
	for _, c := range candidates {
		var prm protectedResource
		found, err := getJSON(ctx, hc, c, &prm)
		if err != nil {
			return nil, err
		}
		if !found || len(prm.AuthorizationServers) == 0 {
			continue
		}
		if prm.Resource != "" {
			if !resourceCovers(prm.Resource, endpoint) {
				return nil, &Error{Reason: ReasonResourceMismatch, Err: fmt.Errorf("protected resource metadata is for %q, not for %s", prm.Resource, endpoint.Redacted())}
			}
			d.resource = prm.Resource
		}
		d.scopesSupported = prm.ScopesSupported
		issuer = prm.AuthorizationServers[0]
		break
	}

	iss, err := url.Parse(issuer)
	if err != nil || (iss.Scheme != "https" && iss.Scheme != "http") || iss.Host == "" {
		return nil, &Error{Reason: ReasonNoGrant, Err: fmt.Errorf("authorization server %q is not an http(s) URL", issuer)}
	}
	for _, c := range serverMetadataURLs(iss) {
		var m serverMetadata
		found, err := getJSON(ctx, hc, c, &m)
		if err != nil {
			return nil, err
		}
		if !found || m.TokenEndpoint == "" {
			continue
		}
		// RFC 8414 §3.3 (and OpenID Connect Discovery §4.3): a document
		// naming another issuer than the one its URL was built from must
		// not be used. Byte for byte: the issuer is an identifier, and a
		// "normalized" match is what a mix-up attacker relies on.
		if m.Issuer != issuer {
			return nil, &Error{Reason: ReasonIssuerMismatch, Err: fmt.Errorf("the metadata at %s names issuer %q, not %q", c, clip(m.Issuer), issuer)}
		}
		d.as = m
		return d, nil
	}
	base := strings.TrimSuffix(iss.String(), "/")
	d.as.Issuer = base
	d.as.AuthorizationEndpoint = base + "/authorize"
	d.as.TokenEndpoint = base + "/token"
	d.as.RegistrationEndpoint = base + "/register"
	return d, nil
}

// clip is an identifier a server chose, short enough for an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// serverMetadataURLs are where issuer's metadata may be, in the order the
// MCP authorization spec gives (2025-11-25, "Authorization Server Metadata
// Discovery").
func serverMetadataURLs(issuer *url.URL) []string {
	origin := issuer.Scheme + "://" + issuer.Host
	p := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if p == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}
}

// getJSON reads url into v. A server that cannot be reached or answers 5xx
// or 429 is unavailable; any other answer but a 200 with JSON is "not
// here" (found false).
func getJSON(ctx context.Context, hc *http.Client, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, nil // a malformed URL a server advertised: try the next
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := hc.Do(req)
	if err != nil {
		return false, unavailable(err, 0)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return false, unavailable(fmt.Errorf("GET %s: %s", u, resp.Status), retryAfter(resp))
	case resp.StatusCode != http.StatusOK:
		return false, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return false, unavailable(err, 0)
	}
	return json.Unmarshal(body, v) == nil, nil
}

// canonicalResource is endpoint as an RFC 8707 resource indicator: no
// fragment, lower-case scheme and host.
func canonicalResource(endpoint *url.URL) string {
	u := *endpoint
	u.Fragment, u.RawFragment = "", ""
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}

// resourceCovers reports whether resource identifies endpoint: the same
// origin, and a path that is endpoint's or one of its parents.
func resourceCovers(resource string, endpoint *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || !SameOrigin(r, endpoint) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	ep := strings.TrimSuffix(endpoint.EscapedPath(), "/")
	return rp == ep || strings.HasPrefix(ep, rp+"/")
}
