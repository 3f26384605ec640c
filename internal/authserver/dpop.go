package authserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// DPoP (RFC 9449) as a provider checks it, written apart from the
// client's code in package auth so that the two check each other: the
// proof's signature, typ, alg and jwk, its htm and htu, an iat within
// proofWindow, a jti never seen before, the nonce, and for a resource
// request ath and the token's key.

// dpopAlgs are the algorithms the server verifies and advertises.
var dpopAlgs = []string{"ES256", "ES384", "ES512", "EdDSA", "RS256", "PS256"}

// proofWindow is how far a proof's iat may be from now.
const proofWindow = time.Minute

// dpopClaims are the claims of a DPoP proof this server reads.
type dpopClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	Nonce string `json:"nonce"`
	ATH   string `json:"ath"`
}

// errNonce is a proof without a current nonce of the server's.
var errNonce = errors.New("use_dpop_nonce")

// nonces is one server's (the token endpoint's or Protect's) nonce: a
// proof may carry the current or the previous one, so that a rotation
// fails no request already under way with the nonce just replaced.
type nonces struct{ cur, prev string }

func (n *nonces) rotate() { n.prev, n.cur = n.cur, randomString(16) }

func (n *nonces) accepts(v string) bool { return v != "" && (v == n.cur || v == n.prev) }

// RotateDPoPNonces gives the token endpoint and Protect new nonces; the
// ones they replace are still taken until the next rotation. It is safe
// for concurrent use.
func (s *Server) RotateDPoPNonces() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asNonce.rotate()
	s.rsNonce.rotate()
}

// checkProof verifies one request's DPoP proof: what every proof must be,
// htm and htu for this request, the nonce of n if the server wants nonces,
// and a jti never seen (recorded once the signature holds, so that a proof
// sent twice is caught even when the first was refused for its nonce). It
// returns the key's thumbprint and the claims; a proof without a current
// nonce is errNonce. s.mu must not be held.
func (s *Server) checkProof(r *http.Request, n *nonces, wantHTU string) (jkt string, c dpopClaims, err error) {
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		return "", c, fmt.Errorf("%d DPoP headers", len(proofs))
	}
	jkt, c, err = parseProof(proofs[0])
	if err != nil {
		return "", c, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.dpopJTIs[c.JTI]; seen {
		s.stats.dpopReplays.Add(1)
		return "", c, errors.New("a jti seen before")
	}
	s.rememberJTILocked(c.JTI, now)
	switch iat := time.Unix(c.IAT, 0); {
	case c.HTM != r.Method:
		return "", c, errors.New("htm is not the request's method")
	case c.HTU != wantHTU:
		return "", c, fmt.Errorf("htu %q is not %q", c.HTU, wantHTU)
	case iat.Before(now.Add(-proofWindow)) || iat.After(now.Add(proofWindow)):
		return "", c, errors.New("iat is too far from now")
	case s.cfg.DPoPNonce && !n.accepts(c.Nonce):
		return "", c, errNonce
	}
	return jkt, c, nil
}

// rememberJTILocked records jti; those older than the window are dropped
// now and then, since a proof that old is refused for its iat anyway.
func (s *Server) rememberJTILocked(jti string, now time.Time) {
	if len(s.dpopJTIs) >= 4096 {
		for j, at := range s.dpopJTIs {
			if now.Sub(at) > 2*proofWindow {
				delete(s.dpopJTIs, j)
			}
		}
	}
	s.dpopJTIs[jti] = now
}

// parseProof checks a proof's form and signature and returns its key's
// RFC 7638 thumbprint and its claims.
func parseProof(proof string) (string, dpopClaims, error) {
	var c dpopClaims
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return "", c, errors.New("not a JWS in compact form")
	}
	var header struct {
		Typ string                     `json:"typ"`
		Alg string                     `json:"alg"`
		JWK map[string]json.RawMessage `json:"jwk"`
	}
	if err := decodeProofPart(parts[0], &header); err != nil {
		return "", c, err
	}
	if header.Typ != "dpop+jwt" {
		return "", c, errors.New("typ is not dpop+jwt")
	}
	if _, private := header.JWK["d"]; private {
		return "", c, errors.New("the jwk holds a private key")
	}
	jwk := map[string]string{}
	for k, v := range header.JWK {
		var s string
		if json.Unmarshal(v, &s) == nil {
			jwk[k] = s
		}
	}
	pub, thumbprint, err := publicKey(jwk)
	if err != nil {
		return "", c, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", c, errors.New("the signature is not base64url")
	}
	if err := verify(pub, header.Alg, []byte(parts[0]+"."+parts[1]), sig); err != nil {
		return "", c, err
	}
	if err := decodeProofPart(parts[1], &c); err != nil {
		return "", c, err
	}
	if c.JTI == "" || c.HTM == "" || c.HTU == "" || c.IAT == 0 {
		return "", c, errors.New("jti, htm, htu or iat missing")
	}
	return thumbprint, c, nil
}

func decodeProofPart(part string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return errors.New("a part is not base64url")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errors.New("a part is not JSON")
	}
	return nil
}

// publicKey reads a public JWK and computes its thumbprint from the
// required members, in lexicographic order, as RFC 7638 §3.2 lists them.
func publicKey(jwk map[string]string) (crypto.PublicKey, string, error) {
	b64 := base64.RawURLEncoding
	var canonical string
	var pub crypto.PublicKey
	switch jwk["kty"] {
	case "EC":
		curves := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}
		curve := curves[jwk["crv"]]
		x, err1 := b64.DecodeString(jwk["x"])
		y, err2 := b64.DecodeString(jwk["y"])
		if curve == nil || err1 != nil || err2 != nil {
			return nil, "", errors.New("a malformed EC jwk")
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return nil, "", errors.New("an EC jwk with coordinates of the wrong size")
		}
		k, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, "", errors.New("an EC jwk off its curve")
		}
		pub = k
		canonical = fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, jwk["crv"], jwk["x"], jwk["y"])
	case "OKP":
		x, err := b64.DecodeString(jwk["x"])
		if jwk["crv"] != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return nil, "", errors.New("a malformed OKP jwk")
		}
		pub = ed25519.PublicKey(x)
		canonical = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, jwk["x"])
	case "RSA":
		n, err1 := b64.DecodeString(jwk["n"])
		e, err2 := b64.DecodeString(jwk["e"])
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			return nil, "", errors.New("a malformed RSA jwk")
		}
		pub = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		canonical = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, jwk["e"], jwk["n"])
	default:
		return nil, "", fmt.Errorf("a jwk of type %q", jwk["kty"])
	}
	sum := sha256.Sum256([]byte(canonical))
	return pub, base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// verify checks a JWS signature by alg, which must suit the key.
func verify(pub crypto.PublicKey, alg string, input, sig []byte) error {
	hashes := map[string]crypto.Hash{"ES256": crypto.SHA256, "ES384": crypto.SHA384, "ES512": crypto.SHA512, "RS256": crypto.SHA256, "PS256": crypto.SHA256}
	digest := func(h crypto.Hash) []byte {
		w := h.New()
		w.Write(input)
		return w.Sum(nil)
	}
	ok := false
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		want := map[string]string{"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}[k.Curve.Params().Name]
		size := (k.Curve.Params().BitSize + 7) / 8
		if alg == want && len(sig) == 2*size {
			r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
			ok = ecdsa.Verify(k, digest(hashes[alg]), r, s)
		}
	case ed25519.PublicKey:
		ok = alg == "EdDSA" && ed25519.Verify(k, input, sig)
	case *rsa.PublicKey:
		switch alg {
		case "RS256":
			ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, digest(crypto.SHA256), sig) == nil
		case "PS256":
			ok = rsa.VerifyPSS(k, crypto.SHA256, digest(crypto.SHA256), sig, nil) == nil
		}
	}
	if !ok {
		return fmt.Errorf("the %s signature does not verify with the jwk", alg)
	}
	return nil
}

// ath is a proof's hash of the access token it goes with.
func ath(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// tokenProof checks the DPoP proof of a token request, if the server
// takes DPoP and the request carries one, and answers the error itself
// when it returns false: 400 invalid_dpop_proof, or use_dpop_nonce with
// the current nonce (RFC 9449 §8). jkt is "" without a proof.
func (s *Server) tokenProof(w http.ResponseWriter, r *http.Request) (jkt string, ok bool) {
	if !s.cfg.DPoP || len(r.Header.Values("DPoP")) == 0 {
		return "", true
	}
	jkt, _, err := s.checkProof(r, &s.asNonce, s.url+"/token")
	s.mu.Lock()
	nonce := s.asNonce.cur
	s.mu.Unlock()
	if s.cfg.DPoPNonce {
		w.Header().Set("DPoP-Nonce", nonce)
	}
	switch {
	case errors.Is(err, errNonce):
		s.stats.dpopNonceChallenges.Add(1)
		writeError(w, http.StatusBadRequest, "use_dpop_nonce", "the authorization server wants a DPoP nonce")
		return "", false
	case err != nil:
		s.stats.dpopRefused.Add(1)
		writeError(w, http.StatusBadRequest, "invalid_dpop_proof", err.Error())
		return "", false
	}
	s.stats.dpopProofs.Add(1)
	return jkt, true
}

// resourceProof checks the DPoP proof of a resource request made with the
// DPoP-bound token t (scheme DPoP, a proof for this request, ath, the
// token's key), and answers the 401 itself when it returns false:
// invalid_dpop_proof, or use_dpop_nonce with the current nonce (RFC 9449
// §9). With nonces, a request it lets through is answered with the
// current nonce.
func (g *guard) resourceProof(w http.ResponseWriter, r *http.Request, scheme, token string, t *accessToken) bool {
	s := g.s
	wantHTU := "http://" + r.Host + r.URL.EscapedPath()
	if r.TLS != nil {
		wantHTU = "https://" + r.Host + r.URL.EscapedPath()
	}
	var err error
	if !strings.EqualFold(scheme, "DPoP") {
		err = errors.New("a DPoP-bound token sent as a bearer token")
	} else {
		var jkt string
		var c dpopClaims
		jkt, c, err = s.checkProof(r, &s.rsNonce, wantHTU)
		switch {
		case err != nil:
		case subtle.ConstantTimeCompare([]byte(c.ATH), []byte(ath(token))) != 1:
			err = errors.New("ath is not the token's hash")
		case jkt != t.jkt:
			err = errors.New("the proof's key is not the token's")
		}
	}
	s.mu.Lock()
	nonce := s.rsNonce.cur
	s.mu.Unlock()
	if s.cfg.DPoPNonce {
		w.Header().Set("DPoP-Nonce", nonce)
	}
	challenge := `DPoP algs="` + strings.Join(dpopAlgs, " ") + `", resource_metadata="` + g.metadataURL + `"`
	switch {
	case errors.Is(err, errNonce):
		s.stats.dpopNonceChallenges.Add(1)
		w.Header().Set("WWW-Authenticate", challenge+`, error="use_dpop_nonce"`)
		http.Error(w, "a DPoP nonce is required", http.StatusUnauthorized)
		return false
	case err != nil:
		s.stats.dpopRefused.Add(1)
		s.stats.refused401.Add(1)
		w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_dpop_proof"`)
		http.Error(w, "invalid DPoP proof", http.StatusUnauthorized)
		return false
	}
	s.stats.dpopProofs.Add(1)
	return true
}
