package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/origin"
)

// DPoP (RFC 9449, SEP-1932) binds the client's tokens to a key it holds:
// every token request and every request to the MCP server carries a proof
// signed with the key, so that a token copied from a log or a proxy is of
// no use without it. Written here, not with a JWT library, for the reason
// assertion.go gives: the key may be a crypto.Signer.

// DPoPMode is when the client binds its tokens to a key with DPoP.
type DPoPMode string

const (
	// DPoPAuto, the default, uses DPoP when the authorization server's
	// metadata lists dpop_signing_alg_values_supported.
	DPoPAuto DPoPMode = ""
	// DPoPAlways sends a proof with every token request, whether the
	// authorization server advertises DPoP or not. A server that ignores
	// the proof answers a bearer token, which is then sent as one.
	DPoPAlways DPoPMode = "always"
	// DPoPNever sends no proof, even to a server that advertises DPoP.
	DPoPNever DPoPMode = "never"
)

// DPoPKey is the private key a grant's tokens are bound to, as a Store
// keeps it with the grant: an elliptic-curve JSON Web Key (RFC 7517, RFC
// 7518 §6.2) with its private part. It is generated for the grant when
// DPoP is first used (P-256, for ES256), so that another replica, or the
// agent after a restart, can use the grant's DPoP-bound refresh token.
//
// It is as sensitive as the refresh token it binds: whoever holds both
// can use the grant. A Store keeps it as it keeps the tokens (FileStore:
// a file only its owner reads; Redis: a server the replicas alone reach).
// Its String and LogValue show the key's thumbprint, never its private
// part. A plain value, safe to share once it is no longer written.
type DPoPKey struct {
	Kty string `json:"kty"` // "EC"
	Crv string `json:"crv"` // "P-256", "P-384" or "P-521"
	X   string `json:"x"`
	Y   string `json:"y"`
	D   string `json:"d"` // the private part
}

// String shows which key it is, not the key.
func (k DPoPKey) String() string {
	p, err := k.parse()
	if err != nil {
		return "DPoPKey(unreadable)"
	}
	return "DPoPKey(" + p.thumbprint + ")"
}

// GoString is String: %#v must not print the private part either.
func (k DPoPKey) GoString() string { return k.String() }

// LogValue is String, for log/slog.
func (k DPoPKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// dpopCurve is a curve a DPoPKey may be on, with its JWS algorithm.
type dpopCurve struct {
	crv, alg string
	curve    elliptic.Curve
}

var dpopCurves = []dpopCurve{
	{"P-256", "ES256", elliptic.P256()},
	{"P-384", "ES384", elliptic.P384()},
	{"P-521", "ES512", elliptic.P521()},
}

// newDPoPKey generates a key for the first of ES256, ES384 and ES512 the
// authorization server lists (ES256 when it lists none).
func newDPoPKey(supported []string) (*DPoPKey, *proofKey, error) {
	for _, c := range dpopCurves {
		if len(supported) > 0 && !slices.Contains(supported, c.alg) {
			continue
		}
		priv, err := ecdsa.GenerateKey(c.curve, rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		pub, err := priv.PublicKey.Bytes() // 0x04 || X || Y
		if err != nil {
			return nil, nil, err
		}
		d, err := priv.Bytes()
		if err != nil {
			return nil, nil, err
		}
		n := (len(pub) - 1) / 2
		b64 := base64.RawURLEncoding.EncodeToString
		k := &DPoPKey{Kty: "EC", Crv: c.crv, X: b64(pub[1 : 1+n]), Y: b64(pub[1+n:]), D: b64(d)}
		p, err := k.parse()
		return k, p, err
	}
	return nil, nil, fmt.Errorf("the authorization server takes DPoP proofs signed with %v only; set Config.DPoPKey to a key for one of them", supported)
}

// parse is the stored key ready to sign (its public part derived from d).
func (k DPoPKey) parse() (*proofKey, error) {
	i := slices.IndexFunc(dpopCurves, func(c dpopCurve) bool { return c.crv == k.Crv })
	if k.Kty != "EC" || i < 0 {
		return nil, fmt.Errorf("a stored DPoP key of type %q, curve %q", k.Kty, k.Crv)
	}
	d, err := base64.RawURLEncoding.DecodeString(k.D)
	if err != nil {
		return nil, errors.New("a stored DPoP key whose d is not base64url")
	}
	priv, err := ecdsa.ParseRawPrivateKey(dpopCurves[i].curve, d)
	if err != nil {
		return nil, errors.New("a stored DPoP key that is not a private key of its curve")
	}
	return newProofKey(priv, dpopCurves[i].alg)
}

// proofKey is a key that signs DPoP proofs: the algorithm, the public key
// as the proofs' jwk header and its RFC 7638 thumbprint (the tokens' cnf.jkt).
// A plain value, safe to share.
type proofKey struct {
	signer     crypto.Signer
	alg        string
	jwk        map[string]string
	thumbprint string
}

func newProofKey(signer crypto.Signer, alg string) (*proofKey, error) {
	jwk, err := publicJWK(signer.Public())
	if err != nil {
		return nil, err
	}
	return &proofKey{signer: signer, alg: alg, jwk: jwk, thumbprint: jwkThumbprint(jwk)}, nil
}

// configuredProofKey is Config.DPoPKey with its algorithm, which must be
// in the authorization server's list when it gives one.
func configuredProofKey(key crypto.Signer, supported []string) (*proofKey, error) {
	alg, err := signingAlgorithm(key, "", nil)
	if err != nil {
		return nil, fmt.Errorf("DPoPKey: %w", err)
	}
	if alg == "PS256" || (len(supported) > 0 && !slices.Contains(supported, alg)) {
		return nil, fmt.Errorf("the authorization server takes DPoP proofs signed with %v, not %s", supported, alg)
	}
	return newProofKey(key, alg)
}

// publicJWK is pub as a JWK with only the members RFC 7638 hashes: the
// proof's jwk header (which must not hold the private part) and the
// thumbprint's input.
func publicJWK(pub crypto.PublicKey) (map[string]string, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		raw, err := p.Bytes()
		if err != nil {
			return nil, err
		}
		n := (len(raw) - 1) / 2
		return map[string]string{"kty": "EC", "crv": p.Curve.Params().Name, "x": b64(raw[1 : 1+n]), "y": b64(raw[1+n:])}, nil
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(p)}, nil
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "n": b64(p.N.Bytes()), "e": b64(big.NewInt(int64(p.E)).Bytes())}, nil
	}
	return nil, fmt.Errorf("no JWK for a %T key", pub)
}

// jwkThumbprint is RFC 7638's: base64url of SHA-256 over the required
// members in lexicographic order, without whitespace. Go's encoding/json
// writes map keys sorted and the values here need no escaping.
func jwkThumbprint(jwk map[string]string) string {
	raw, _ := json.Marshal(jwk)
	sum := sha256.Sum256(raw)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// proof is a DPoP proof JWT (RFC 9449 §4.2) for one request: method and
// URL (htu without query or fragment), a fresh jti, the server's nonce if
// it gave one, and ath, the access token's hash, for a resource request.
func (k *proofKey) proof(method string, u *url.URL, nonce, accessToken string, now time.Time) (string, error) {
	header := map[string]any{"typ": "dpop+jwt", "alg": k.alg, "jwk": k.jwk}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	b64 := base64.RawURLEncoding.EncodeToString
	claims := map[string]any{"jti": b64(jti), "htm": method, "htu": htu(u), "iat": now.Unix()}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = b64(sum[:])
	}
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := b64(h) + "." + b64(c)
	sig, err := sign(k.signer, k.alg, []byte(input))
	if err != nil {
		return "", fmt.Errorf("DPoP proof: %w", err)
	}
	return input + "." + b64(sig), nil
}

// htu is the URL a proof names: scheme, host and path, no query or
// fragment (RFC 9449 §4.2); an empty path is "/", as the request sends it.
func htu(u *url.URL) string {
	v := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	if v.Path == "" {
		v.Path = "/"
	}
	return v.String()
}

// originOf is the key nonces are kept under: scheme, host and port.
func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + origin.Port(u)
}

// dpopState is one OAuth's DPoP: the nonce each origin gave last (an
// authorization server's and the MCP server's rotate independently), the
// key each recent access token is bound to, and the key this process last
// used and for which grant, in case the Store forgets it with the grant.
// It is safe for concurrent use. Lock order: mu is a leaf (it may be taken
// under the Store's lock, by a renewal); nothing is called while it is
// held.
type dpopState struct {
	mu     sync.Mutex
	nonces map[string]string    // origin → the last DPoP-Nonce it sent
	bound  map[string]*proofKey // access token → its key, for DPoP-bound tokens
	order  []string             // bound's tokens, oldest first
	last   *proofKey
	stored *DPoPKey // last's stored form; nil for Config.DPoPKey
	of     Key      // the grant last and stored are for
}

// maxBound is how many access tokens dpopState remembers the key of: a
// request may still carry a token a renewal replaced a moment ago.
const maxBound = 8

func (s *dpopState) nonce(u *url.URL) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nonces[originOf(u)]
}

// observe keeps the nonce a response from u's origin carries: a server
// may rotate it on any response, a successful one included.
func (s *dpopState) observe(u *url.URL, resp *http.Response) {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nonces == nil {
		s.nonces = map[string]string{}
	}
	s.nonces[originOf(u)] = n
}

func (s *dpopState) bind(token string, k *proofKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound == nil {
		s.bound = map[string]*proofKey{}
	}
	if _, ok := s.bound[token]; !ok {
		s.order = append(s.order, token)
	}
	s.bound[token] = k
	for len(s.order) > maxBound {
		delete(s.bound, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *dpopState) keyFor(token string) *proofKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound[token]
}

// dpopWanted reports whether the renewals for d use DPoP.
func (o *OAuth) dpopWanted(d *discovery) bool {
	switch o.cfg.DPoP {
	case DPoPNever:
		return false
	case DPoPAlways:
		return true
	}
	return o.cfg.DPoPKey != nil || len(d.as.DPoPSigningAlgValuesSupported) > 0
}

// grantProofKey is the key a renewal of cur, the grant stored under k,
// proves possession of, nil without DPoP: Config.DPoPKey; else the grant's
// stored key; else the one this process used last for k (the Store forgot
// the grant, and this process's token is bound to it); else a new one,
// which the renewal stores with the grant.
func (o *OAuth) grantProofKey(d *discovery, k Key, cur Grant) (*proofKey, *DPoPKey, error) {
	if !o.dpopWanted(d) {
		return nil, nil, nil
	}
	supported := d.as.DPoPSigningAlgValuesSupported
	if o.cfg.DPoPKey != nil {
		key, err := configuredProofKey(o.cfg.DPoPKey, supported)
		if err != nil {
			return nil, nil, &Error{Reason: ReasonInvalidClient, Err: err}
		}
		return key, nil, nil
	}
	if cur.DPoP != nil {
		key, err := cur.DPoP.parse()
		if err == nil {
			return key, cur.DPoP, nil
		}
		o.env.Logger.Warn("the stored grant's DPoP key is unusable; a new one replaces it", "err", err)
	}
	o.dpop.mu.Lock()
	last, stored, of := o.dpop.last, o.dpop.stored, o.dpop.of
	o.dpop.mu.Unlock()
	if stored != nil && of == k {
		return last, stored, nil
	}
	stored, key, err := newDPoPKey(supported)
	if err != nil {
		if o.cfg.DPoP == DPoPAuto {
			// Advertised with algorithms this client does not generate
			// keys for: bearer tokens, as if it were not advertised.
			o.env.Logger.Warn("DPoP not used", "err", err)
			return nil, nil, nil
		}
		return nil, nil, &Error{Reason: ReasonInvalidClient, Err: err}
	}
	return key, stored, nil
}

// renewWithProof is renew with the grant's DPoP key: its token requests
// carry proofs, the grant written keeps the key, and the token obtained
// is sent with the key if the authorization server bound it (token_type
// DPoP).
func (o *OAuth) renewWithProof(ctx context.Context, d *discovery, k Key, r *renewal, cur Grant) (*obtained, *Grant, error) {
	key, stored, err := o.grantProofKey(d, k, cur)
	if err != nil {
		return nil, nil, err
	}
	if key == nil {
		return o.renew(ctx, d, k, r, cur)
	}
	got, next, err := o.renew(context.WithValue(ctx, proofKeyContext{}, key), d, k, r, cur)
	if next != nil && next.Token != nil {
		next.DPoP = stored
	}
	if got != nil && strings.EqualFold(got.tok.TokenType, "DPoP") {
		o.dpop.bind(got.tok.AccessToken, key)
		o.dpop.mu.Lock()
		o.dpop.last, o.dpop.stored, o.dpop.of = key, stored, k
		o.dpop.mu.Unlock()
	}
	return got, next, err
}

// proofKeyContext carries the renewal's key down to its token requests
// (tokenContext), whatever the grant: a renewal's context is its own.
type proofKeyContext struct{}

// tokenProofs is what a token request needs for DPoP, nil without.
func (o *OAuth) tokenProofs(ctx context.Context) *tokenProofs {
	k, _ := ctx.Value(proofKeyContext{}).(*proofKey)
	if k == nil {
		return nil
	}
	return &tokenProofs{key: k, state: &o.dpop}
}

// tokenProofs signs the proofs of one renewal's token requests.
type tokenProofs struct {
	key   *proofKey
	state *dpopState
}

// maxNonceResends bounds the resends of one request for a new DPoP nonce:
// a server asks once per nonce it rotates, and each resend carries the
// newest.
const maxNonceResends = 3

// sendWithProof sends a token request built by build: with a DPoP proof
// if the renewal has a key, and again at once (a new proof, the new nonce,
// a new client assertion) when the authorization server answers
// use_dpop_nonce: it did not run the request.
func (t *tokenRequests) sendWithProof(build func() (*http.Request, error)) (*http.Response, error) {
	nonce := ""
	for resent := 0; ; resent++ {
		r, err := build()
		if err != nil {
			return nil, err
		}
		if t.proofs == nil {
			return t.base.RoundTrip(r)
		}
		if resent == 0 {
			nonce = t.proofs.state.nonce(r.URL)
		}
		p, err := t.proofs.key.proof(r.Method, r.URL, nonce, "", time.Now())
		if err != nil {
			return nil, err
		}
		r.Header.Set("DPoP", p)
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		t.proofs.state.observe(r.URL, resp)
		if resent >= maxNonceResends || !asksForNonce(resp) {
			return resp, nil
		}
		resp.Body.Close()
		// This answer's nonce, not the latest kept: an older answer to
		// another request may have been read after it.
		nonce = resp.Header.Get("DPoP-Nonce")
	}
}

// asksForNonce reports whether an authorization server's answer is
// use_dpop_nonce with a nonce (RFC 9449 §8): a 400 (or 401) whose error is
// use_dpop_nonce. A response it is not stays readable.
func asksForNonce(resp *http.Response) bool {
	if (resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnauthorized) || resp.Header.Get("DPoP-Nonce") == "" {
		return false
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(raw, &e) == nil && e.Error == "use_dpop_nonce"
}

// proofSource is an Authorizer whose tokens may be DPoP-bound (OAuth).
type proofSource interface {
	// dpopFor is the key token is bound to (nil: a bearer token) and
	// where the servers' nonces are kept.
	dpopFor(token string) (*proofKey, *dpopState)
}

func (o *OAuth) dpopFor(token string) (*proofKey, *dpopState) {
	if token == "" {
		return nil, &o.dpop
	}
	return o.dpop.keyFor(token), &o.dpop
}

// authorized is req with token's headers: "Authorization: Bearer", or for
// a DPoP-bound token "Authorization: DPoP" and a proof made for this send
// alone (RFC 9449 §7.1), with nonce, or if "" the origin's latest.
func (t *Transport) authorized(req *http.Request, token, nonce string) (*http.Request, error) {
	var key *proofKey
	var state *dpopState
	if ps, ok := t.Source.(proofSource); ok && token != "" {
		key, state = ps.dpopFor(token)
	}
	if key == nil {
		return withToken(req, token), nil
	}
	if nonce == "" {
		nonce = state.nonce(req.URL)
	}
	p, err := key.proof(req.Method, req.URL, nonce, token, time.Now())
	if err != nil {
		return nil, err
	}
	r := withToken(req, "")
	r.Header["Authorization"] = []string{"DPoP " + token}
	r.Header.Set("DPoP", p)
	return r, nil
}

// nonceChallenged keeps the nonce resp carries, if any, and reports
// whether resp is the MCP server's use_dpop_nonce challenge to a request
// sent with a DPoP proof (RFC 9449 §9): a 401 whose DPoP challenge says
// error="use_dpop_nonce", with a DPoP-Nonce. The request did not run.
func (t *Transport) nonceChallenged(sent *http.Request, resp *http.Response) bool {
	ps, ok := t.Source.(proofSource)
	if !ok {
		return false
	}
	_, state := ps.dpopFor("")
	state.observe(sent.URL, resp)
	if resp.StatusCode != http.StatusUnauthorized || sent.Header.Get("DPoP") == "" || resp.Header.Get("DPoP-Nonce") == "" {
		return false
	}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if params, ok := schemeParams(v, "dpop"); ok && params["error"] == "use_dpop_nonce" {
			return true
		}
	}
	return false
}

// validateDPoP reports a DPoP configuration that cannot work.
func (c *Config) validateDPoP() error {
	switch c.DPoP {
	case DPoPAuto, DPoPAlways, DPoPNever:
	default:
		return fmt.Errorf("auth: unknown DPoP mode %q", c.DPoP)
	}
	if c.DPoPKey != nil && c.DPoP != DPoPNever {
		if _, err := configuredProofKey(c.DPoPKey, nil); err != nil {
			return fmt.Errorf("auth: %w", err)
		}
	}
	return nil
}
