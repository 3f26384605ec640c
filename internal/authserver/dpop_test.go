package authserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
)

// proof is an ES256 DPoP proof by key, written here apart from package
// auth's so that the server is checked against a third reading of RFC 9449.
func proof(t *testing.T, key *ecdsa.PrivateKey, method, htu, nonce, token string) string {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	pub, _ := key.PublicKey.Bytes()
	header, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "ES256",
		"jwk": map[string]string{"kty": "EC", "crv": "P-256", "x": b64(pub[1:33]), "y": b64(pub[33:])}})
	jti := make([]byte, 12)
	_, _ = rand.Read(jti)
	claims := map[string]any{"jti": b64(jti), "htm": method, "htu": htu, "iat": time.Now().Unix()}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		claims["ath"] = b64(sum[:])
	}
	c, _ := json.Marshal(claims)
	input := b64(header) + "." + b64(c)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + b64(sig)
}

// tokenWithProof posts form to the token endpoint with a DPoP header.
func (r *rig) tokenWithProof(t *testing.T, form url.Values, dpop string) (tokenReply, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.as.URL()+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", dpop)
	resp, body := r.do(t, req)
	var out tokenReply
	_ = json.Unmarshal(body, &out)
	out.status = resp.StatusCode
	return out, resp
}

func (r *rig) callWithProof(t *testing.T, scheme, token, dpop string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.resource, nil)
	req.Header.Set("Authorization", scheme+" "+token)
	req.Header.Set("DPoP", dpop)
	resp, _ := r.do(t, req)
	return resp
}

// The server takes a DPoP-bound token only with a valid proof for the
// request by the token's key, and refuses each way a proof can be wrong;
// a public client's refresh token is bound to the key too.
func TestDPoPBinding(t *testing.T) {
	r := newRig(t, authserver.Config{DPoP: true})
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tokenURL := r.as.URL() + "/token"

	id, _ := r.register(t, "none")
	verifier, challenge := pkce()
	q := r.authorize(t, id, challenge, "st", "", r.resource)
	tok, _ := r.tokenWithProof(t, url.Values{
		"grant_type": {"authorization_code"}, "client_id": {id}, "code": {q.Get("code")},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}, "resource": {r.resource},
	}, proof(t, k1, "POST", tokenURL, "", ""))
	if tok.status != http.StatusOK || tok.TokenType != "DPoP" {
		t.Fatalf("token request with a proof: %+v", tok)
	}
	at := tok.AccessToken

	good := proof(t, k1, "GET", r.resource, "", at)
	wantStatus(t, "a valid proof", r.callWithProof(t, "DPoP", at, good), http.StatusOK)
	for name, resp := range map[string]*http.Response{
		"the same proof again":        r.callWithProof(t, "DPoP", at, good),
		"the Bearer scheme":           r.callWithProof(t, "Bearer", at, proof(t, k1, "GET", r.resource, "", at)),
		"no proof":                    r.call(t, "", at),
		"another key":                 r.callWithProof(t, "DPoP", at, proof(t, k2, "GET", r.resource, "", at)),
		"another token's hash":        r.callWithProof(t, "DPoP", at, proof(t, k1, "GET", r.resource, "", "other")),
		"no ath":                      r.callWithProof(t, "DPoP", at, proof(t, k1, "GET", r.resource, "", "")),
		"another URL":                 r.callWithProof(t, "DPoP", at, proof(t, k1, "GET", r.resource+"/x", "", at)),
		"another method":              r.callWithProof(t, "DPoP", at, proof(t, k1, "POST", r.resource, "", at)),
		"a signature by another key":  r.callWithProof(t, "DPoP", at, strings.Join(append(strings.Split(proof(t, k1, "GET", r.resource, "", at), ".")[:2], strings.Split(proof(t, k2, "GET", r.resource, "", at), ".")[2]), ".")),
		"a proof that is not a proof": r.callWithProof(t, "DPoP", at, "a.b.c"),
	} {
		wantStatus(t, name, resp, http.StatusUnauthorized)
	}
	if n := r.hits.Load(); n != 1 {
		t.Errorf("%d requests got through; want the one with a valid proof", n)
	}
	if st := r.as.Stats(); st.DPoPReplays != 1 || st.DPoPRefused < 9 {
		t.Errorf("stats %+v; want 1 replay, every bad proof refused", st)
	}

	refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {id}, "refresh_token": {tok.RefreshToken}}
	if got, _ := r.tokenWithProof(t, refresh, proof(t, k2, "POST", tokenURL, "", "")); got.status != http.StatusBadRequest || got.Error != "invalid_dpop_proof" {
		t.Errorf("refresh with another key: %+v; want invalid_dpop_proof", got)
	}
	if got := r.refresh(t, id, tok.RefreshToken); got.status != http.StatusBadRequest {
		t.Errorf("refresh without a proof: %+v; want refused", got)
	}
	if got, _ := r.tokenWithProof(t, refresh, proof(t, k1, "POST", tokenURL, "", "")); got.status != http.StatusOK || got.TokenType != "DPoP" {
		t.Errorf("refresh with the grant's key: %+v", got)
	}
}

// With nonces, a proof without the current or the previous one is
// answered use_dpop_nonce with the current one, by the token endpoint
// (400) and by Protect (401); a rotation leaves the previous one good.
func TestDPoPNonces(t *testing.T) {
	r := newRig(t, authserver.Config{DPoP: true, DPoPNonce: true, ClientID: "agent", ClientSecret: "s3cret"})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tokenURL := r.as.URL() + "/token"
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"agent"}, "client_secret": {"s3cret"}, "resource": {r.resource}}

	got, resp := r.tokenWithProof(t, form, proof(t, key, "POST", tokenURL, "", ""))
	asNonce := resp.Header.Get("DPoP-Nonce")
	if got.status != http.StatusBadRequest || got.Error != "use_dpop_nonce" || asNonce == "" {
		t.Fatalf("a proof without a nonce: %+v, nonce %q; want use_dpop_nonce with one", got, asNonce)
	}
	got, _ = r.tokenWithProof(t, form, proof(t, key, "POST", tokenURL, asNonce, ""))
	if got.status != http.StatusOK || got.TokenType != "DPoP" {
		t.Fatalf("with the nonce: %+v", got)
	}
	at := got.AccessToken

	resp = r.callWithProof(t, "DPoP", at, proof(t, key, "GET", r.resource, asNonce, at))
	rsNonce := resp.Header.Get("DPoP-Nonce")
	wantStatus(t, "the authorization server's nonce at the resource", resp, http.StatusUnauthorized)
	if !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="use_dpop_nonce"`) || rsNonce == "" || rsNonce == asNonce {
		t.Fatalf("challenge %q, nonce %q; want use_dpop_nonce with the resource's own", resp.Header.Get("WWW-Authenticate"), rsNonce)
	}
	wantStatus(t, "the resource's nonce", r.callWithProof(t, "DPoP", at, proof(t, key, "GET", r.resource, rsNonce, at)), http.StatusOK)
	r.as.RotateDPoPNonces()
	resp = r.callWithProof(t, "DPoP", at, proof(t, key, "GET", r.resource, rsNonce, at))
	wantStatus(t, "the previous nonce", resp, http.StatusOK)
	if n := resp.Header.Get("DPoP-Nonce"); n == rsNonce || n == "" {
		t.Errorf("a success after a rotation carries nonce %q; want the new one", n)
	}
	r.as.RotateDPoPNonces()
	wantStatus(t, "a nonce two rotations old", r.callWithProof(t, "DPoP", at, proof(t, key, "GET", r.resource, rsNonce, at)), http.StatusUnauthorized)
	if st := r.as.Stats(); st.DPoPNonceChallenges != 3 || st.DPoPRefused != 0 {
		t.Errorf("stats %+v; want 3 nonce challenges, none refused otherwise", st)
	}
}
