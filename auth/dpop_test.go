package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// RFC 7638 §3.1's example: the thumbprint of its RSA key.
func TestJWKThumbprintRFC7638(t *testing.T) {
	n, _ := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	jwk, err := publicJWK(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jwkThumbprint(jwk), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; got != want {
		t.Errorf("thumbprint %s, want %s", got, want)
	}
}

// A proof is a dpop+jwt JWS with the public key alone in its header, the
// claims RFC 9449 §4.2 asks for, a jti of its own, and a signature the
// key verifies: for a generated key and for each kind of crypto.Signer.
func TestDPoPProof(t *testing.T) {
	_, generated, err := newDPoPKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	keys := []*proofKey{generated}
	for _, s := range []crypto.Signer{rk, ed} {
		k, err := configuredProofKey(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	u, _ := url.Parse("https://MCP.example:8443/mcp/v1?session=1#frag")
	jtis := map[string]bool{}
	for _, k := range keys {
		for range 2 {
			p, err := k.proof("POST", u, "n-1", "the-token", time.Unix(1000, 0))
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(p, ".")
			var header struct {
				Typ, Alg string
				JWK      map[string]string
			}
			var claims map[string]any
			decode(t, parts[0], &header)
			decode(t, parts[1], &claims)
			sum := sha256.Sum256([]byte("the-token"))
			if header.Typ != "dpop+jwt" || header.Alg != k.alg || header.JWK["d"] != "" || jwkThumbprint(header.JWK) != k.thumbprint {
				t.Errorf("%s: header %+v", k.alg, header)
			}
			if claims["htm"] != "POST" || claims["htu"] != "https://mcp.example:8443/mcp/v1" || claims["iat"].(float64) != 1000 ||
				claims["nonce"] != "n-1" || claims["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
				t.Errorf("%s: claims %v", k.alg, claims)
			}
			jti, _ := claims["jti"].(string)
			if jti == "" || jtis[jti] {
				t.Errorf("%s: jti %q empty or used before", k.alg, jti)
			}
			jtis[jti] = true
			sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
			input := []byte(parts[0] + "." + parts[1])
			digest := sha256.Sum256(input)
			var ok bool
			switch pub := k.signer.Public().(type) {
			case *ecdsa.PublicKey:
				ok = len(sig) == 64 && ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
			case *rsa.PublicKey:
				ok = rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) == nil
			case ed25519.PublicKey:
				ok = ed25519.Verify(pub, input, sig)
			}
			if !ok {
				t.Errorf("%s: the signature does not verify", k.alg)
			}
		}
	}
	if _, err := configuredProofKey(rk, []string{"ES256"}); err == nil {
		t.Error("an RSA key accepted by a server that takes ES256 only")
	}
}

// The generated key goes into the Store and comes back the same key; its
// text, in any form a log may take, never holds the private part.
func TestDPoPKeyStored(t *testing.T) {
	stored, k, err := newDPoPKey([]string{"RS256", "ES384"})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Crv != "P-384" || k.alg != "ES384" {
		t.Errorf("key for a server that lists RS256 and ES384: %s %s", stored.Crv, k.alg)
	}
	raw, err := json.Marshal(Grant{DPoP: stored})
	if err != nil {
		t.Fatal(err)
	}
	var g Grant
	if err := json.Unmarshal(raw, &g); err != nil || g.DPoP == nil {
		t.Fatalf("read back: %v %v", g.DPoP, err)
	}
	again, err := g.DPoP.parse()
	if err != nil || again.thumbprint != k.thumbprint || g.clone().DPoP == g.DPoP {
		t.Errorf("read back: %v, thumbprint %s want %s; or a clone shares the key", err, again.thumbprint, k.thumbprint)
	}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("grant", "key", *stored, "ptr", stored)
	text := fmt.Sprintf("%v %+v %#v %s %v", *stored, stored, *stored, stored, g) + logs.String()
	if strings.Contains(text, stored.D) || !strings.Contains(text, k.thumbprint) {
		t.Errorf("the key's text %q holds its private part, or not its thumbprint", text)
	}
	if _, _, err := newDPoPKey([]string{"RS256"}); err == nil {
		t.Error("a key generated for a server that takes RS256 only")
	}
	for _, bad := range []DPoPKey{{Kty: "EC", Crv: "P-256", D: "!"}, {Kty: "RSA"}, {Kty: "EC", Crv: "P-256", D: "AAAA"}} {
		if _, err := bad.parse(); err == nil {
			t.Errorf("%+v parsed", bad)
		}
	}
}

// dpopRig is a Transport whose OAuth holds a DPoP-bound token, and an MCP
// server that records what each request carried.
type dpopRig struct {
	tr   *Transport
	url  string
	mu   sync.Mutex
	seen []map[string]any // each request's proof claims
}

func newDPoPRig(t *testing.T, answer func(n int, claims map[string]any, w http.ResponseWriter)) *dpopRig {
	r := &dpopRig{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var claims map[string]any
		if p := strings.Split(req.Header.Get("DPoP"), "."); len(p) == 3 && req.Header.Get("Authorization") == "DPoP tok" {
			decode(t, p[1], &claims)
		}
		r.mu.Lock()
		r.seen = append(r.seen, claims)
		n := len(r.seen)
		r.mu.Unlock()
		answer(n, claims, w)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/mcp")
	o := NewOAuth(u, Config{}, Env{})
	t.Cleanup(o.Close)
	_, k, _ := newDPoPKey(nil)
	o.tok, o.refreshAt = &Token{AccessToken: "tok", TokenType: "DPoP"}, time.Now().Add(time.Hour)
	o.dpop.bind("tok", k)
	r.tr, r.url = &Transport{Base: http.DefaultTransport, Source: o, Origin: u}, u.String()
	return r
}

func (r *dpopRig) post(t *testing.T) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, r.url, strings.NewReader(`{"jsonrpc":"2.0"}`))
	resp, err := r.tr.RoundTrip(req)
	if resp != nil {
		resp.Body.Close()
	}
	return resp, err
}

func challengeNonce(w http.ResponseWriter, nonce string) {
	w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="a nonce, please"`)
	w.Header().Set("DPoP-Nonce", nonce)
	w.WriteHeader(http.StatusUnauthorized)
}

// F46: the MCP server's use_dpop_nonce is answered at once with its nonce
// and a fresh proof; a nonce on a successful answer is used next, without
// a challenge; a server that asks for a new nonce at every send ends the
// request after maxNonceResends as ErrUnavailable (it did not run), not
// as a refused token.
func TestDPoPNonceChallenge(t *testing.T) {
	r := newDPoPRig(t, func(n int, claims map[string]any, w http.ResponseWriter) {
		switch {
		case n == 1:
			challengeNonce(w, "n1")
		case n == 2 && claims["nonce"] == "n1":
			w.Header().Set("DPoP-Nonce", "n2") // rotated on a success
			w.WriteHeader(http.StatusOK)
		case n == 3 && claims["nonce"] == "n2":
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	})
	for range 2 {
		if resp, err := r.post(t); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("post: %v %v; seen %v", resp, err, r.seen)
		}
	}
	if r.seen[0]["jti"] == r.seen[1]["jti"] || r.seen[0]["ath"] == nil {
		t.Errorf("the resend reused the proof, or it has no ath: %v", r.seen)
	}

	always := newDPoPRig(t, func(n int, claims map[string]any, w http.ResponseWriter) {
		challengeNonce(w, fmt.Sprint("n", n))
	})
	_, err := always.post(t)
	var ae *Error
	if !errors.Is(err, ErrUnavailable) || errors.As(err, &ae) || len(always.seen) != maxNonceResends+1 {
		t.Errorf("a nonce asked at every send: %v after %d sends; want ErrUnavailable after %d", err, len(always.seen), maxNonceResends+1)
	}
	for i, c := range always.seen[1:] {
		if c["nonce"] != fmt.Sprint("n", i+1) {
			t.Errorf("send %d carried nonce %v, want the one the answer before gave", i+2, c["nonce"])
		}
	}
}

// A server that takes DPoP-bound tokens only challenges with DPoP: its
// resource_metadata is read from there; a Bearer challenge comes first,
// and a scheme's name inside a value is not a scheme.
func TestParseChallengeDPoP(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   Challenge
	}{
		{[]string{`DPoP resource_metadata="http://a/prm"`}, Challenge{ResourceMetadata: "http://a/prm"}},
		{[]string{`DPoP error="use_dpop_nonce", algs="ES256"`, `Bearer resource_metadata="http://a/dpop"`}, Challenge{ResourceMetadata: "http://a/dpop"}},
		{[]string{`Basic realm="http://x/bearer", DPoP error="invalid_token"`}, Challenge{Error: "invalid_token"}},
	} {
		h := http.Header{}
		for _, v := range tc.header {
			h.Add("WWW-Authenticate", v)
		}
		if got := ParseChallenge(h); got.ResourceMetadata != tc.want.ResourceMetadata || got.Error != tc.want.Error {
			t.Errorf("ParseChallenge(%q) = %+v, want %+v", tc.header, got, tc.want)
		}
	}
}
