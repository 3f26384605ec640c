package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// GrantType is how the client obtains tokens.
type GrantType string

const (
	GrantAuthorizationCode GrantType = "authorization_code" // a user authorizes in a browser (Config.Authorize)
	GrantClientCredentials GrantType = "client_credentials" // the client authorizes itself with a secret or key
)

// identity is who the client is to one authorization server.
type identity struct {
	clientID, secret string
	method           string // token endpoint authentication
}

// grantFor picks the grant: the configured one, else authorization_code
// when a user can be asked and the server offers it (no list counts as
// offering), else client_credentials when the client has a secret or key
// and the server offers it.
func (o *OAuth) grantFor(d *discovery) (GrantType, error) {
	offered := func(g GrantType) bool {
		l := d.as.GrantTypesSupported
		return len(l) == 0 || slices.Contains(l, string(g))
	}
	switch {
	case o.assertionGrant():
		return GrantJWTBearer, nil
	case o.cfg.GrantType != "":
		return o.cfg.GrantType, nil
	case o.cfg.Authorize != nil && offered(GrantAuthorizationCode):
		return GrantAuthorizationCode, nil
	case (o.cfg.ClientSecret != "" || o.cfg.PrivateKey != nil) && o.cfg.ClientID != "" && offered(GrantClientCredentials):
		return GrantClientCredentials, nil
	case o.cfg.Authorize == nil && o.cfg.ClientSecret == "" && o.cfg.PrivateKey == nil:
		return "", &Error{Reason: ReasonNoToken, Err: errors.New("the server wants authorization and no Authorize func, secret or key is configured")}
	}
	return "", &Error{Reason: ReasonNoGrant, Err: fmt.Errorf("the authorization server offers grants %v", d.as.GrantTypesSupported)}
}

// identityFor is who the client is for a renewal under the Store's lock:
// the configured client or metadata document; else the registration
// stored (made by another process, or an earlier one); else this
// process's own, which the Store lost; else a new registration. It
// reports whether reg is to be written.
func (o *OAuth) identityFor(ctx context.Context, d *discovery, stored *Registration, mine *identity) (id *identity, reg *Registration, write bool, err error) {
	switch {
	case o.cfg.ClientID != "" || (o.cfg.ClientMetadataURL != "" && d.as.ClientIDMetadataDocumentSupported) || o.cfg.Workload != nil:
		id, err = o.identify(ctx, d)
		return id, stored, false, err
	case stored != nil && stored.ClientID != "":
		return &identity{clientID: stored.ClientID, secret: stored.ClientSecret, method: stored.AuthMethod}, stored, false, nil
	case mine != nil:
		return mine, mine.registration(), true, nil
	}
	// No registration for a client that could not use it.
	if _, err := o.grantFor(d); err != nil {
		return nil, nil, false, err
	}
	if id, err = o.identify(ctx, d); err != nil {
		return nil, nil, false, err
	}
	return id, id.registration(), true, nil
}

func (id *identity) registration() *Registration {
	return &Registration{ClientID: id.clientID, ClientSecret: id.secret, AuthMethod: id.method}
}

// identify says who the client is: a configured client ID; else its
// metadata document's URL when the server takes those; else a dynamic
// registration (RFC 7591).
func (o *OAuth) identify(ctx context.Context, d *discovery) (*identity, error) {
	switch {
	case o.cfg.ClientID != "":
		return &identity{clientID: o.cfg.ClientID, secret: o.cfg.ClientSecret, method: o.authMethod(d, o.cfg.ClientSecret != "")}, nil
	case o.cfg.ClientMetadataURL != "" && d.as.ClientIDMetadataDocumentSupported:
		return &identity{clientID: o.cfg.ClientMetadataURL, method: o.authMethod(d, false)}, nil
	case o.cfg.Workload != nil:
		return &identity{method: "none"}, nil // the assertion says who it is
	case d.as.RegistrationEndpoint != "":
		return o.register(ctx, d)
	}
	return nil, &Error{Reason: ReasonNoRegistration, Err: errors.New("no client ID is configured and the authorization server has no registration endpoint")}
}

// authMethod is the token endpoint authentication: configured, else a key
// → private_key_jwt, a secret → client_secret_basic if the server lists it
// or lists nothing, else client_secret_post; neither → none.
func (o *OAuth) authMethod(d *discovery, hasSecret bool) string {
	listed := d.as.TokenEndpointAuthMethodsSupported
	switch {
	case o.cfg.TokenEndpointAuthMethod != "":
		return o.cfg.TokenEndpointAuthMethod
	case o.cfg.PrivateKey != nil:
		return "private_key_jwt"
	case hasSecret && (len(listed) == 0 || slices.Contains(listed, "client_secret_basic")):
		return "client_secret_basic"
	case hasSecret:
		return "client_secret_post"
	}
	return "none"
}

// register is RFC 7591 dynamic client registration, as a public client
// when the server allows it.
func (o *OAuth) register(ctx context.Context, d *discovery) (*identity, error) {
	method := "none"
	if l := d.as.TokenEndpointAuthMethodsSupported; len(l) > 0 && !slices.Contains(l, "none") {
		method = "client_secret_basic"
		if !slices.Contains(l, method) {
			method = "client_secret_post"
		}
	}
	grants := []string{string(GrantAuthorizationCode), "refresh_token"}
	body, _ := json.Marshal(map[string]any{
		"client_name":                o.env.ClientName,
		"application_type":           applicationType(o.cfg.RedirectURI),
		"redirect_uris":              []string{o.cfg.RedirectURI},
		"grant_types":                grants,
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.as.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Reason: ReasonNoRegistration, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := o.env.HTTPClient.Do(req)
	if err != nil {
		return nil, unavailable(err, 0)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return nil, unavailable(fmt.Errorf("registration: %s", resp.Status), retryAfter(resp))
	}
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Method       string `json:"token_endpoint_auth_method"`
		Error        string `json:"error"`
	}
	if err := json.Unmarshal(raw, &reg); err != nil || resp.StatusCode/100 != 2 || reg.ClientID == "" {
		return nil, &Error{Reason: ReasonNoRegistration, Err: fmt.Errorf("registration answered %s %s", resp.Status, reg.Error)}
	}
	id := &identity{clientID: reg.ClientID, secret: reg.ClientSecret, method: reg.Method}
	if id.method == "" {
		id.method = method
		if method == "none" && id.secret != "" {
			id.method = "client_secret_basic"
		}
	}
	return id, nil
}

// applicationType is the registration's application_type (OpenID
// Connect Dynamic Client Registration §2, required by SEP-837): "native"
// for a client whose redirect URI is a loopback address or a custom
// scheme (an agent on the user's machine, a desktop or CLI program),
// "web" for one redirected to a host on the network. Authorization
// servers hold native clients to the redirect rules of RFC 8252.
func applicationType(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return "native"
	}
	switch u.Scheme {
	case "http", "https":
		if isLoopback(u.Hostname()) {
			return "native"
		}
		return "web"
	}
	return "native"
}

// isLoopback: host names this machine (RFC 8252 §7.3; "localhost" is
// allowed, if not recommended, by §8.3).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// endpointConfig is x/oauth2's view of one grant with this client.
func (o *OAuth) endpointConfig(d *discovery, id *identity, scopes []string) *oauth2.Config {
	c := &oauth2.Config{
		ClientID:    id.clientID,
		RedirectURL: o.cfg.RedirectURI,
		Scopes:      scopes,
		Endpoint: oauth2.Endpoint{
			AuthURL:   d.as.AuthorizationEndpoint,
			TokenURL:  d.as.TokenEndpoint,
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
	switch id.method {
	case "client_secret_basic":
		c.ClientSecret, c.Endpoint.AuthStyle = id.secret, oauth2.AuthStyleInHeader
	case "client_secret_post":
		c.ClientSecret = id.secret
	}
	return c
}

// tokenContext is ctx carrying the HTTP client x/oauth2 is to use: the
// authorization server's, with every token request completed by
// completeTokenRequest.
func (o *OAuth) tokenContext(ctx context.Context, d *discovery, id *identity) (context.Context, error) {
	rt := &tokenRequests{base: o.env.HTTPClient.Transport, endpoint: d.as.TokenEndpoint, resource: d.resource, proofs: o.tokenProofs(ctx)}
	if id.method == "private_key_jwt" {
		if o.cfg.PrivateKey == nil {
			return nil, &Error{Reason: ReasonInvalidClient, Err: errors.New("private_key_jwt without a PrivateKey")}
		}
		alg, err := signingAlgorithm(o.cfg.PrivateKey, o.cfg.SigningAlgorithm, d.as.TokenEndpointAuthSigningAlgValuesSupported)
		if err != nil {
			return nil, &Error{Reason: ReasonInvalidClient, Err: err}
		}
		rt.assertion = func() (string, error) {
			return clientAssertion(o.cfg.PrivateKey, alg, o.cfg.KeyID, id.clientID, d.as.Issuer, time.Now())
		}
	}
	if rt.base == nil {
		rt.base = http.DefaultTransport
	}
	hc := *o.env.HTTPClient
	hc.Transport = rt
	return context.WithValue(ctx, oauth2.HTTPClient, &hc), nil
}

// tokenRequests adds to each token request what x/oauth2 cannot: the
// resource indicator on a refresh (RFC 8707; x/oauth2's refresh takes no
// parameters), the private_key_jwt assertion (RFC 7523) and the DPoP
// proof (RFC 9449).
type tokenRequests struct {
	base      http.RoundTripper
	endpoint  string
	resource  string
	assertion func() (string, error)
	proofs    *tokenProofs // nil without DPoP
}

func (t *tokenRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.String() != t.endpoint || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	raw, err := io.ReadAll(io.LimitReader(req.Body, maxMetadata))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		return nil, err
	}
	if form.Get("resource") == "" && t.resource != "" {
		form.Set("resource", t.resource)
	}
	// Built again for a resend: an assertion is used once.
	return t.sendWithProof(func() (*http.Request, error) {
		if t.assertion != nil {
			a, err := t.assertion()
			if err != nil {
				return nil, err
			}
			form.Set("client_assertion_type", assertionType)
			form.Set("client_assertion", a)
		}
		body := form.Encode()
		r := req.Clone(req.Context())
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
		return r, nil
	})
}

// tokenError sorts a failed token request: unreachable or 5xx/429 is
// unavailable (back off, try again); invalid_grant and the client's own
// errors are authorization errors, never retried on their own.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return unavailable(err, 0)
		}
		var ae *Error
		if errors.As(err, &ae) {
			return err
		}
		return unavailable(err, 0) // could not reach it, or an unreadable answer
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	// x/oauth2's message includes the response body; an authorization
	// server's error body holds no credential, but keep to the code.
	why := fmt.Errorf("token endpoint answered %d %s %s", status, re.ErrorCode, re.ErrorDescription)
	switch {
	case status >= 500 || status == http.StatusTooManyRequests:
		return unavailable(why, retryAfter(re.Response))
	case re.ErrorCode == "invalid_grant":
		return &Error{Reason: ReasonInvalidGrant, Err: why}
	case re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client" || status == http.StatusUnauthorized:
		return &Error{Reason: ReasonInvalidClient, Err: why}
	}
	return &Error{Reason: ReasonDenied, Err: why}
}

// authorizationCode runs the browser step through Config.Authorize and
// exchanges the code: PKCE S256, state checked, resource on both legs.
func (o *OAuth) authorizationCode(ctx context.Context, d *discovery, id *identity, scopes []string) (*oauth2.Token, error) {
	conf := o.endpointConfig(d, id, scopes)
	state := randomString()
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))

	actx, cancel := context.WithTimeout(ctx, o.cfg.AuthorizeTimeout)
	redirected, err := o.cfg.Authorize(actx, authURL)
	cancel()
	if err != nil {
		return nil, &Error{Reason: ReasonDenied, Err: &redacted{err: err, text: "Authorize: " + strings.ReplaceAll(err.Error(), authURL, d.as.AuthorizationEndpoint)}}
	}
	got, err := url.Parse(redirected)
	want, _ := url.Parse(o.cfg.RedirectURI)
	if err != nil || want == nil || !SameOrigin(got, want) || got.Path != want.Path {
		return nil, &Error{Reason: ReasonStateMismatch, Err: errors.New("the browser was not redirected to RedirectURI")}
	}
	q := got.Query()
	if q.Get("state") != state {
		return nil, &Error{Reason: ReasonStateMismatch, Err: errors.New("the redirect's state is not the one sent")}
	}
	if err := checkIssuer(q, d.as); err != nil {
		return nil, err
	}
	if e := q.Get("error"); e != "" {
		return nil, &Error{Reason: ReasonDenied, Err: fmt.Errorf("the authorization server answered %s", e)}
	}
	code := q.Get("code")
	if code == "" {
		return nil, &Error{Reason: ReasonDenied, Err: errors.New("the redirect carries no code")}
	}
	tctx, err := o.tokenContext(ctx, d, id)
	if err != nil {
		return nil, err
	}
	tok, err := conf.Exchange(tctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	if err != nil {
		return nil, tokenError(err)
	}
	return tok, nil
}

// checkIssuer is RFC 9207's defence against a mix-up: the authorization
// response q (an error response too) must come from the issuer the client
// sent the user to. A present iss is compared byte for byte with the
// recorded issuer, whether or not the server advertised it (a normalized
// comparison is what an attacker's look-alike issuer relies on); a
// missing one is refused only where the server promised to send it.
func checkIssuer(q url.Values, as serverMetadata) error {
	iss, present := q["iss"]
	switch {
	case present && (len(iss) != 1 || iss[0] != as.Issuer):
		return &Error{Reason: ReasonIssuerMismatch, Err: fmt.Errorf("the authorization response comes from issuer %q, not %q", clip(strings.Join(iss, " ")), as.Issuer)}
	case !present && as.AuthorizationResponseIssParameterSupported:
		return &Error{Reason: ReasonIssuerMismatch, Err: fmt.Errorf("the authorization response carries no iss, which %q promises (RFC 9207)", as.Issuer)}
	}
	return nil
}

// refresh spends refreshToken once (x/oauth2's refresh grant).
func (o *OAuth) refresh(ctx context.Context, d *discovery, id *identity, refreshToken string) (*oauth2.Token, error) {
	tctx, err := o.tokenContext(ctx, d, id)
	if err != nil {
		return nil, err
	}
	src := o.endpointConfig(d, id, nil).TokenSource(tctx, &oauth2.Token{RefreshToken: refreshToken, Expiry: time.Unix(1, 0)})
	tok, err := src.Token()
	if err != nil {
		return nil, tokenError(err)
	}
	return tok, nil
}

// clientCredentials is the client_credentials grant (x/oauth2).
func (o *OAuth) clientCredentials(ctx context.Context, d *discovery, id *identity, scopes []string) (*oauth2.Token, error) {
	conf := o.endpointConfig(d, id, scopes)
	cc := &clientcredentials.Config{
		ClientID: conf.ClientID, ClientSecret: conf.ClientSecret, TokenURL: conf.Endpoint.TokenURL,
		Scopes: scopes, AuthStyle: conf.Endpoint.AuthStyle,
		EndpointParams: url.Values{"resource": {d.resource}},
	}
	return o.tokenRequest(ctx, d, id, cc)
}

// tokenRequest sends cc's token request, x/oauth2's client-credentials
// shape, which the JWT bearer grants share (EndpointParams' grant_type
// replaces its own), through tokenContext's additions.
func (o *OAuth) tokenRequest(ctx context.Context, d *discovery, id *identity, cc *clientcredentials.Config) (*oauth2.Token, error) {
	tctx, err := o.tokenContext(ctx, d, id)
	if err != nil {
		return nil, err
	}
	tok, err := cc.Token(tctx)
	if err != nil {
		return nil, tokenError(err)
	}
	return tok, nil
}

// redacted is an error whose text no longer holds the authorization URL
// (its state and code challenge): an Authorize func's error, such as an
// HTTP client's, often quotes the URL it failed to open.
type redacted struct {
	err  error
	text string
}

func (r *redacted) Error() string { return r.text }
func (r *redacted) Unwrap() error { return r.err }

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
