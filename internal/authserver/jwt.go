package authserver

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
)

// ES256 JWTs, by hand: this server signs ID tokens, workload assertions
// and ID-JAGs, and verifies those of the issuers it trusts. A JWT library
// would be a dependency for forty lines.

// signJWT signs claims with key, with typ in the header.
func signJWT(key *ecdsa.PrivateKey, typ string, claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": typ})
	c, _ := json.Marshal(claims)
	input := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		panic("authserver: signing a JWT: " + err.Error()) // never, with crypto/rand
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + b64(sig)
}

// jwtParts is a JWT decoded, not yet verified.
type jwtParts struct {
	typ    string
	claims map[string]any
	input  string // header.payload, what the signature covers
	sig    []byte
}

func parseJWT(token string) (*jwtParts, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWS compact serialization")
	}
	var header struct{ Alg, Typ string }
	if err := decodePart(parts[0], &header); err != nil {
		return nil, err
	}
	if header.Alg != "ES256" {
		return nil, errors.New("alg is not ES256")
	}
	p := &jwtParts{typ: header.Typ, input: parts[0] + "." + parts[1]}
	if err := decodePart(parts[1], &p.claims); err != nil {
		return nil, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, errors.New("malformed signature")
	}
	p.sig = sig
	return p, nil
}

// verify checks the signature with pub.
func (p *jwtParts) verify(pub *ecdsa.PublicKey) bool {
	sum := sha256.Sum256([]byte(p.input))
	r, s := new(big.Int).SetBytes(p.sig[:32]), new(big.Int).SetBytes(p.sig[32:])
	return ecdsa.Verify(pub, sum[:], r, s)
}

// str is a string claim, "" if absent or not a string.
func (p *jwtParts) str(name string) string {
	s, _ := p.claims[name].(string)
	return s
}

// num is a numeric date claim, 0 if absent.
func (p *jwtParts) num(name string) int64 {
	f, _ := p.claims[name].(float64)
	return int64(f)
}

func decodePart(part string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return errors.New("malformed base64url")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errors.New("malformed JSON")
	}
	return nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
