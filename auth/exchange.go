package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// GrantJWTBearer is RFC 7523's JWT bearer authorization grant: the client
// presents a JWT someone else signed (an ID-JAG from the enterprise's
// identity provider, or a workload's identity token) and gets an access
// token for it, with no user and no browser. Config.Enterprise and
// Config.Workload select it.
const GrantJWTBearer GrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// The RFC 8693 token exchange of enterprise-managed authorization.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
)

// EnterpriseAuthorization is enterprise-managed authorization (SEP-990,
// the MCP extension io.modelcontextprotocol/enterprise-managed-authorization),
// for an agent acting for a user of an enterprise whose identity provider
// decides which MCP servers the user may reach. Each grant is two token
// requests, no browser: the user's ID token is exchanged (RFC 8693) at
// the identity provider for an ID-JAG (an identity assertion JWT
// authorization grant) naming the MCP server's authorization server and
// resource; the ID-JAG is then presented with the RFC 7523 JWT bearer
// grant at that authorization server (the one discovered from the
// protected resource metadata), authenticated as Config.ClientID, which
// is required.
//
// The access token follows the lifecycle of every grant: renewed ahead of
// expiry once for all callers, under the Store's lock, paced by one
// backoff while the identity provider or the authorization server is
// unreachable. When it expires the grant is simply run again (a refresh
// token, which such servers should not issue, is used if one came): the
// last ID-JAG is presented again while it is valid, else a new one is
// asked for with a fresh ID token (and once more if the authorization
// server refuses an ID-JAG presented again: some take each only once).
// The ID-JAG stays in this process's memory, never in the Store. The
// Store's key names the client, not the user: clients acting for
// different users must not share a Store with the same ClientID.
//
// A plain value; the funcs it holds must be safe for concurrent use.
type EnterpriseAuthorization struct {
	// IDToken returns the user's ID token from the identity provider's
	// single sign-on. It is called for every exchange and must return a
	// valid one (refreshing it at the identity provider when it expired).
	// Required. An error wrapping ErrUnavailable is paced by the backoff
	// and tried again; any other error fails the grant (no_token).
	IDToken func(ctx context.Context) (string, error)
	// TokenEndpoint is the identity provider's token endpoint, where the
	// exchange is sent. "": discovered from Issuer's metadata (RFC 8414,
	// then OpenID), once.
	TokenEndpoint string
	Issuer        string // the identity provider's issuer; needed without TokenEndpoint
	// ClientID and ClientSecret: the client at the identity provider
	// (not the one at the MCP server's authorization server). With a
	// secret it authenticates with client_secret_basic; without one it
	// names itself with client_id.
	ClientID, ClientSecret string
}

// WorkloadIdentity is workload identity federation (SEP-1933), for a
// service that runs with an identity its platform attests (a Kubernetes
// service account token, a cloud's or a CI system's OIDC token): the
// platform's JWT is presented with the RFC 7523 JWT bearer grant at the
// MCP server's authorization server, which trusts the platform. No user,
// no browser, no secret. Set exactly one of AssertionFile and Assertion.
//
// The assertion is read again for every grant: platforms rotate it, and a
// rotated file's new assertion is the one sent. Config.ClientID, if set,
// names the client (with its secret or key, if any); else none is named.
// A refused assertion (invalid_grant, unauthorized_client, invalid_scope)
// is not sent again: calls fail at once with the reason until the file is
// replaced or written (the next call then presents the new assertion), or
// until Authorize.
//
// A plain value; Assertion must be safe for concurrent use.
type WorkloadIdentity struct {
	// AssertionFile is the file the platform writes the JWT to, such as
	// /var/run/secrets/tokens/mcp-token; surrounding white space is
	// ignored. An unreadable or empty file fails the grant (no_token).
	AssertionFile string
	// Assertion returns the JWT instead. An error wrapping ErrUnavailable
	// is paced by the backoff and tried again; any other error fails the
	// grant (no_token).
	Assertion func(ctx context.Context) (string, error)
}

// Errors of Config.Validate for these grants.
var (
	ErrEnterpriseAndWorkload = errors.New("auth: Enterprise and Workload are both set: one grant per client")
	ErrAssertionGrantConfig  = errors.New("auth: incomplete JWT bearer grant configuration")
)

// validateAssertionGrants is Validate's part for Enterprise and Workload.
func (c *Config) validateAssertionGrants() error {
	e, w := c.Enterprise, c.Workload
	switch {
	case e != nil && w != nil:
		return ErrEnterpriseAndWorkload
	case (e != nil || w != nil) && c.GrantType != "" && c.GrantType != GrantJWTBearer:
		return fmt.Errorf("%w: GrantType %q with Enterprise or Workload", ErrAssertionGrantConfig, c.GrantType)
	case e == nil && w == nil && c.GrantType == GrantJWTBearer:
		return fmt.Errorf("%w: GrantType jwt-bearer needs Enterprise or Workload", ErrAssertionGrantConfig)
	case e != nil && e.IDToken == nil:
		return fmt.Errorf("%w: Enterprise needs IDToken", ErrAssertionGrantConfig)
	case e != nil && e.TokenEndpoint == "" && e.Issuer == "":
		return fmt.Errorf("%w: Enterprise needs the identity provider's TokenEndpoint or Issuer", ErrAssertionGrantConfig)
	case e != nil && c.ClientID == "":
		return fmt.Errorf("%w: Enterprise needs ClientID, the client the ID-JAG is issued to", ErrAssertionGrantConfig)
	case w != nil && (w.AssertionFile == "") == (w.Assertion == nil):
		return fmt.Errorf("%w: Workload needs exactly one of AssertionFile and Assertion", ErrAssertionGrantConfig)
	}
	return nil
}

// assertionGrant: the client's grant is the JWT bearer grant, which needs
// no user.
func (o *OAuth) assertionGrant() bool { return o.cfg.Enterprise != nil || o.cfg.Workload != nil }

// idJAGs is what enterprise-managed authorization keeps between grants:
// the identity provider's token endpoint once discovered, and the last
// ID-JAG, presented again while it is valid (the draft's advice: the
// ID-JAG stands in for a refresh token). Its lock is a leaf: never held
// while waiting for anything.
type idJAGs struct {
	mu       sync.Mutex
	endpoint string
	key      string // the audience, resource and scopes jag was issued for
	jag      string
	expiry   time.Time
}

// jwtBearer is the RFC 7523 JWT bearer grant at d's authorization server
// with the workload's assertion or an ID-JAG.
func (o *OAuth) jwtBearer(ctx context.Context, d *discovery, id *identity, scopes []string) (*oauth2.Token, error) {
	if o.cfg.Workload != nil {
		a, err := o.workloadAssertion(ctx)
		if err != nil {
			return nil, err
		}
		return o.presentAssertion(ctx, d, id, scopes, a)
	}
	jag, cached, err := o.idJAG(ctx, d, scopes, true)
	if err != nil {
		return nil, err
	}
	tok, err := o.presentAssertion(ctx, d, id, scopes, jag)
	var ae *Error
	if cached && errors.As(err, &ae) && ae.Reason == ReasonInvalidGrant {
		// An authorization server may take each ID-JAG once: ask the
		// identity provider for a new one, once.
		if jag, _, err = o.idJAG(ctx, d, scopes, false); err != nil {
			return nil, err
		}
		tok, err = o.presentAssertion(ctx, d, id, scopes, jag)
	}
	if err != nil {
		o.jags.mu.Lock()
		o.jags.jag = "" // refused, or maybe spent: not presented again
		o.jags.mu.Unlock()
	}
	return tok, err
}

// presentAssertion sends the JWT bearer grant with assertion, authenticated
// as id (x/oauth2's client_credentials request with the grant type
// replaced, which it allows).
func (o *OAuth) presentAssertion(ctx context.Context, d *discovery, id *identity, scopes []string, assertion string) (*oauth2.Token, error) {
	conf := o.endpointConfig(d, id, scopes)
	cc := &clientcredentials.Config{
		ClientID: conf.ClientID, ClientSecret: conf.ClientSecret, TokenURL: conf.Endpoint.TokenURL,
		Scopes: scopes, AuthStyle: conf.Endpoint.AuthStyle,
		EndpointParams: url.Values{
			"grant_type": {string(GrantJWTBearer)},
			"assertion":  {assertion},
			"resource":   {d.resource},
		},
	}
	return o.tokenRequest(ctx, d, id, cc)
}

// workloadAssertion reads the workload's JWT, again for every grant.
func (o *OAuth) workloadAssertion(ctx context.Context) (string, error) {
	w := o.cfg.Workload
	if w.Assertion != nil {
		a, err := w.Assertion(ctx)
		if err != nil {
			return "", userFuncError("Workload.Assertion", err)
		}
		if a = strings.TrimSpace(a); a == "" {
			return "", &Error{Reason: ReasonNoToken, Err: errors.New("Workload.Assertion returned no assertion")}
		}
		return a, nil
	}
	o.read.saw(w.AssertionFile)
	raw, err := os.ReadFile(w.AssertionFile)
	if err != nil {
		return "", &Error{Reason: ReasonNoToken, Err: fmt.Errorf("reading the workload's assertion: %w", err)}
	}
	a := strings.TrimSpace(string(raw))
	if a == "" {
		return "", &Error{Reason: ReasonNoToken, Err: fmt.Errorf("the workload's assertion file %s is empty", w.AssertionFile)}
	}
	return a, nil
}

// assertionFile is the Workload's assertion file as the last grant found
// it, so that a grant lost to a refused assertion is tried again once the
// platform rotated the file, and not before.
type assertionFile struct {
	mu   sync.Mutex
	seen os.FileInfo // nil: not read yet, or it could not be
}

// saw records the file as it is before it is read.
func (a *assertionFile) saw(name string) {
	fi, _ := os.Stat(name)
	a.mu.Lock()
	a.seen = fi
	a.mu.Unlock()
}

// assertionRotated reports whether the Workload's assertion file changed
// since the last grant read it (replaced, written, or appeared): a lost
// grant is then tried again with the new assertion. It is a stat, called
// under o.mu only while the grant is lost.
func (o *OAuth) assertionRotated() bool {
	w := o.cfg.Workload
	if w == nil || w.AssertionFile == "" {
		return false
	}
	cur, err := os.Stat(w.AssertionFile)
	o.read.mu.Lock()
	prev := o.read.seen
	o.read.mu.Unlock()
	switch {
	case err != nil:
		return false
	case prev == nil:
		return true
	}
	return !os.SameFile(prev, cur) || !cur.ModTime().Equal(prev.ModTime()) || cur.Size() != prev.Size()
}

// idJAG returns an ID-JAG for d's authorization server, resource and
// scopes: the last one if reuse allows it and it is valid for a while
// yet (cached true), else a new one from the identity provider.
func (o *OAuth) idJAG(ctx context.Context, d *discovery, scopes []string, reuse bool) (jag string, cached bool, err error) {
	key := d.as.Issuer + "\x00" + d.resource + "\x00" + strings.Join(union(nil, scopes), " ")
	c := &o.jags
	c.mu.Lock()
	if reuse && c.jag != "" && c.key == key && time.Until(c.expiry) > 30*time.Second {
		jag = c.jag
	}
	endpoint := c.endpoint
	c.mu.Unlock()
	if jag != "" {
		return jag, true, nil
	}
	if endpoint == "" {
		if endpoint, err = o.idpTokenEndpoint(ctx); err != nil {
			return "", false, err
		}
	}
	jag, expiry, err := o.exchangeIDToken(ctx, endpoint, d, scopes)
	if err != nil {
		return "", false, err
	}
	c.mu.Lock()
	c.endpoint, c.key, c.jag, c.expiry = endpoint, key, jag, expiry
	c.mu.Unlock()
	return jag, false, nil
}

// idpTokenEndpoint is Enterprise.TokenEndpoint, else the one in the
// identity provider's metadata.
func (o *OAuth) idpTokenEndpoint(ctx context.Context) (string, error) {
	e := o.cfg.Enterprise
	if e.TokenEndpoint != "" {
		return e.TokenEndpoint, nil
	}
	iss, err := url.Parse(e.Issuer)
	if err != nil || (iss.Scheme != "https" && iss.Scheme != "http") || iss.Host == "" {
		return "", &Error{Reason: ReasonNoGrant, Err: fmt.Errorf("the identity provider's issuer %q is not an http(s) URL", e.Issuer)}
	}
	for _, u := range serverMetadataURLs(iss) {
		var m serverMetadata
		found, err := getJSON(ctx, o.env.HTTPClient, u, &m)
		if err != nil {
			return "", err
		}
		if found && m.TokenEndpoint != "" {
			return m.TokenEndpoint, nil
		}
	}
	return "", &Error{Reason: ReasonNoGrant, Err: fmt.Errorf("the identity provider %s publishes no token endpoint", e.Issuer)}
}

// exchangeIDToken is the RFC 8693 token exchange at the identity
// provider: the user's ID token for an ID-JAG naming d's authorization
// server (audience) and resource. It returns the ID-JAG and when it
// expires (zero if unknown: not presented again).
func (o *OAuth) exchangeIDToken(ctx context.Context, endpoint string, d *discovery, scopes []string) (string, time.Time, error) {
	e := o.cfg.Enterprise
	idToken, err := e.IDToken(ctx)
	if err != nil {
		return "", time.Time{}, userFuncError("Enterprise.IDToken", err)
	}
	if idToken == "" {
		return "", time.Time{}, &Error{Reason: ReasonNoToken, Err: errors.New("Enterprise.IDToken returned no token")}
	}
	audience := d.as.Issuer
	if audience == "" {
		audience = d.as.TokenEndpoint
	}
	cc := &clientcredentials.Config{
		ClientID: e.ClientID, ClientSecret: e.ClientSecret, TokenURL: endpoint, Scopes: scopes,
		AuthStyle: oauth2.AuthStyleInParams,
		EndpointParams: url.Values{
			"grant_type":           {grantTokenExchange},
			"requested_token_type": {tokenTypeIDJAG},
			"subject_token":        {idToken},
			"subject_token_type":   {tokenTypeIDToken},
			"audience":             {audience},
			"resource":             {d.resource},
		},
	}
	if e.ClientSecret != "" {
		cc.AuthStyle = oauth2.AuthStyleInHeader
	}
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, o.env.HTTPClient))
	if err != nil {
		err = tokenError(err)
		var ae *Error
		if errors.As(err, &ae) {
			return "", time.Time{}, &Error{Reason: ae.Reason, Err: fmt.Errorf("token exchange at the identity provider: %w", ae.Err)}
		}
		return "", time.Time{}, err
	}
	if typ, _ := tok.Extra("issued_token_type").(string); typ != "" && typ != tokenTypeIDJAG {
		return "", time.Time{}, &Error{Reason: ReasonDenied, Err: fmt.Errorf("the identity provider issued a %s, not an ID-JAG", typ)}
	}
	expiry := tok.Expiry
	if expiry.IsZero() {
		expiry = jwtExpiry(tok.AccessToken)
	}
	return tok.AccessToken, expiry, nil
}

// jwtExpiry is a JWT's exp claim, read without verifying anything (the
// authorization server verifies): zero if there is none.
func jwtExpiry(jwt string) time.Time {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}

// userFuncError sorts an error of a func in the Config: one wrapping
// ErrUnavailable, or the renewal's context ending, is tried again after
// the backoff; any other fails the grant.
func userFuncError(name string, err error) error {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return unavailable(fmt.Errorf("%s: %w", name, err), 0)
	}
	return &Error{Reason: ReasonNoToken, Err: fmt.Errorf("%s: %w", name, err)}
}
