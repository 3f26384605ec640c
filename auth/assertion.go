package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// assertionType is RFC 7523's client_assertion_type for private_key_jwt.
const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Written by hand rather than with a JWT library: the key is a
// crypto.Signer, which is what an HSM or a cloud KMS hands out, and the
// JWT libraries sign only with concrete key types.

// signingAlgorithm is the JWS algorithm for key: the configured one if
// set, else the one the key implies. It must be in the authorization
// server's list when it gives one.
func signingAlgorithm(key crypto.Signer, configured string, supported []string) (string, error) {
	alg := configured
	if alg == "" {
		switch pub := key.Public().(type) {
		case *ecdsa.PublicKey:
			alg = map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[pub.Curve.Params().BitSize]
		case ed25519.PublicKey:
			alg = "EdDSA"
		case *rsa.PublicKey:
			alg = "RS256"
		}
	}
	if _, ok := hashes[alg]; !ok {
		return "", fmt.Errorf("no JWS algorithm for a %T key (%q)", key.Public(), alg)
	}
	if len(supported) > 0 && !slices.Contains(supported, alg) {
		return "", fmt.Errorf("the authorization server does not take %s client assertions (it lists %v)", alg, supported)
	}
	return alg, nil
}

var hashes = map[string]crypto.Hash{
	"ES256": crypto.SHA256, "ES384": crypto.SHA384, "ES512": crypto.SHA512,
	"RS256": crypto.SHA256, "RS384": crypto.SHA384, "RS512": crypto.SHA512,
	"PS256": crypto.SHA256, "EdDSA": 0,
}

// clientAssertion is a signed RFC 7523 JWT naming the client to audience
// (the authorization server's issuer), valid for a minute, used once.
func clientAssertion(key crypto.Signer, alg, keyID, clientID, audience string, now time.Time) (string, error) {
	header := map[string]string{"alg": alg, "typ": "JWT"}
	if keyID != "" {
		header["kid"] = keyID
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	claims := map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	}
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	sig, err := sign(key, alg, []byte(input))
	if err != nil {
		return "", err
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func sign(key crypto.Signer, alg string, msg []byte) ([]byte, error) {
	hash := hashes[alg]
	digest := msg
	var opts crypto.SignerOpts = hash
	if hash != 0 {
		h := hash.New()
		h.Write(msg)
		digest = h.Sum(nil)
	}
	if alg == "PS256" {
		opts = &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: hash}
	}
	sig, err := key.Sign(rand.Reader, digest, opts)
	if err != nil {
		return nil, fmt.Errorf("signing the client assertion: %w", err)
	}
	if pub, ok := key.Public().(*ecdsa.PublicKey); ok {
		// A crypto.Signer gives ASN.1; JWS wants r and s, each padded to
		// the curve's size (RFC 7518 §3.4).
		var rs struct{ R, S *big.Int }
		if _, err := asn1.Unmarshal(sig, &rs); err != nil {
			return nil, fmt.Errorf("signing the client assertion: %w", err)
		}
		size := (pub.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		rs.R.FillBytes(out[:size])
		rs.S.FillBytes(out[size:])
		return out, nil
	}
	return sig, nil
}
