package auth

import (
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
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   Challenge
	}{
		{[]string{`Bearer resource_metadata="http://a/.well-known/oauth-protected-resource/mcp", scope="read write"`},
			Challenge{ResourceMetadata: "http://a/.well-known/oauth-protected-resource/mcp", Scopes: []string{"read", "write"}}},
		{[]string{`Bearer error="insufficient_scope", scope="mcp:admin", error_description="needs \"admin\""`},
			Challenge{Error: "insufficient_scope", Scopes: []string{"mcp:admin"}}},
		{[]string{`Basic realm="x"`, `bearer error=invalid_token`}, Challenge{Error: "invalid_token"}},
		{[]string{`Basic realm="x", Bearer scope="a"`}, Challenge{Scopes: []string{"a"}}},
		{[]string{`Bearer`}, Challenge{}},
		{[]string{`Bearerish scope="a"`}, Challenge{}},
		{nil, Challenge{}},
	} {
		h := http.Header{}
		for _, v := range tc.header {
			h.Add("WWW-Authenticate", v)
		}
		got := ParseChallenge(h)
		if got.ResourceMetadata != tc.want.ResourceMetadata || got.Error != tc.want.Error || !slices.Equal(got.Scopes, tc.want.Scopes) {
			t.Errorf("ParseChallenge(%q) = %+v, want %+v", tc.header, got, tc.want)
		}
	}
}

// A client assertion is a JWS the key's public half verifies, with the
// claims RFC 7523 asks for, for each kind of key a crypto.Signer may be.
func TestClientAssertionVerifies(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for _, key := range []crypto.Signer{ec, rk, ed} {
		alg, err := signingAlgorithm(key, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		jwt, err := clientAssertion(key, alg, "k1", "client-1", "http://as.example", time.Unix(1000, 0))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(jwt, ".")
		if len(parts) != 3 {
			t.Fatalf("%s: %d parts", alg, len(parts))
		}
		var header map[string]string
		var claims map[string]any
		decode(t, parts[0], &header)
		decode(t, parts[1], &claims)
		if header["alg"] != alg || header["kid"] != "k1" || claims["iss"] != "client-1" || claims["sub"] != "client-1" ||
			claims["aud"] != "http://as.example" || claims["exp"].(float64) != 1060 || claims["jti"] == "" {
			t.Errorf("%s: header %v claims %v", alg, header, claims)
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		var ok bool
		switch k := key.Public().(type) {
		case *ecdsa.PublicKey:
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			ok = len(sig) == 64 && ecdsa.Verify(k, digest[:], r, s)
		case *rsa.PublicKey:
			ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil
		case ed25519.PublicKey:
			ok = ed25519.Verify(k, []byte(parts[0]+"."+parts[1]), sig)
		}
		if !ok {
			t.Errorf("%s: the signature does not verify", alg)
		}
	}
	if _, err := signingAlgorithm(ec, "", []string{"RS256"}); err == nil {
		t.Error("an ES256 key accepted by a server that takes RS256 only")
	}
}

func decode(t *testing.T, part string, v any) {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil || json.Unmarshal(raw, v) != nil {
		t.Fatalf("undecodable JWT part %q", part)
	}
}

// An Authorize func that fails quoting the authorization URL: the error
// says so without the URL's state and code challenge.
func TestAuthorizeErrorHidesTheAuthorizationURL(t *testing.T) {
	o := NewOAuth(mustParse(t, "http://127.0.0.1:1/mcp"), Config{
		RedirectURI: "http://127.0.0.1:2/cb",
		Authorize: func(_ context.Context, authURL string) (string, error) {
			return "", fmt.Errorf("Get %q: connection refused: %w", authURL, errBrowser)
		},
	}, Env{})
	defer o.Close()
	d := &discovery{resource: "http://127.0.0.1:1/mcp"}
	d.as.AuthorizationEndpoint, d.as.TokenEndpoint = "http://127.0.0.1:3/authorize", "http://127.0.0.1:3/token"
	_, err := o.authorizationCode(t.Context(), d, &identity{clientID: "c", method: "none"}, nil)
	var ae *Error
	if !errors.As(err, &ae) || ae.Reason != ReasonDenied || !errors.Is(err, errBrowser) {
		t.Fatalf("err = %v; want %s wrapping the func's error", err, ReasonDenied)
	}
	if s := err.Error(); strings.Contains(s, "state=") || strings.Contains(s, "code_challenge") || !strings.Contains(s, "http://127.0.0.1:3/authorize") {
		t.Errorf("error text %q: want the endpoint without the query", s)
	}
}

var errBrowser = errors.New("no browser")

func mustParse(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A token endpoint that answers 503 with Retry-After: 1 is not asked again
// before that second, however many callers wait; a caller whose deadline
// comes first gets ErrUnavailable at once.
func TestRefreshHonoursRetryAfter(t *testing.T) {
	var requests atomic.Int32
	var up atomic.Bool
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !up.Load() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"a2","token_type":"Bearer","expires_in":60,"refresh_token":"r2"}`))
	}))
	defer as.Close()
	o := NewOAuth(mustParse(t, "http://127.0.0.1:1/mcp"), Config{}, Env{})
	defer o.Close()
	o.challenged = true
	o.disc = &discovery{resource: "http://127.0.0.1:1/mcp"}
	o.disc.as.TokenEndpoint = as.URL + "/token"
	o.id = &identity{clientID: "c", method: "none"}
	o.key = o.storeKey(o.disc) // the grant o.tok belongs to
	o.tok = &Token{AccessToken: "a1", RefreshToken: "r1", Expiry: time.Now().Add(-time.Second)}

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			if _, err := o.Token(ctx); !errors.Is(err, ErrUnavailable) {
				t.Errorf("while the server is down: %v; want ErrUnavailable", err)
			}
		})
	}
	wg.Wait()
	if n := requests.Load(); n != 1 {
		t.Errorf("%d token requests within the Retry-After second; want 1", n)
	}
	up.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if tok, err := o.Token(ctx); tok != "a2" || err != nil {
		t.Errorf("after the pause: %q, %v", tok, err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d token requests in all; want 2", n)
	}
}

// slowTokenStore is a user's TokenStore that takes its time, and notes
// whether it was called while the OAuth's own lock was held.
type slowTokenStore struct {
	transport.MemoryTokenStore
	o            *OAuth
	calls        atomic.Int32
	underOAuthMu atomic.Int32
}

func (s *slowTokenStore) GetToken(ctx context.Context) (*transport.Token, error) {
	s.calls.Add(1)
	if s.o.mu.TryLock() {
		s.o.mu.Unlock()
	} else {
		s.underOAuthMu.Add(1)
	}
	time.Sleep(50 * time.Millisecond)
	return s.MemoryTokenStore.GetToken(ctx)
}

// The stored token is read by the renewal, detached from the caller that
// needed it, and never under the OAuth's lock: a first caller whose
// context has ended does not leave it unread, and the next caller gets it
// without a request to the authorization server.
func TestStoredTokenReadByTheRenewal(t *testing.T) {
	ts := &slowTokenStore{}
	if err := ts.SaveToken(t.Context(), &transport.Token{AccessToken: "stored", RefreshToken: "r", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	o := NewOAuth(mustParse(t, "http://127.0.0.1:1/mcp"), Config{ClientID: "c", TokenStore: ts}, Env{})
	defer o.Close()
	ts.o = o
	o.challenged = true
	o.disc = &discovery{resource: "http://127.0.0.1:1/mcp"}
	o.disc.as.Issuer, o.disc.as.TokenEndpoint = "http://127.0.0.1:1", "http://127.0.0.1:1/token" // nothing listens

	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if tok, err := o.Token(ended); err == nil {
		t.Fatalf("a caller whose context ended got %q", tok)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if tok, err := o.Token(ctx); tok != "stored" || err != nil {
		t.Fatalf("the next caller: %q, %v; want the stored token", tok, err)
	}
	if ts.calls.Load() == 0 || ts.underOAuthMu.Load() != 0 {
		t.Errorf("the TokenStore was read %d times, %d of them under the OAuth's lock; want some, none", ts.calls.Load(), ts.underOAuthMu.Load())
	}
	if r, _, a := o.Counts(); r != 0 || a != 0 {
		t.Errorf("%d refreshes, %d authorizations; want none", r, a)
	}
}

// After invalid_grant the store is read again before anything is cleared:
// here another holder (one whose lease lapsed under this one) wrote a new
// grant while the refresh was on its way, and the refresh token this one
// sent was spent by it. The caller gets the other holder's token; the
// grant is not cleared.
func TestInvalidGrantReadsTheStoreAgain(t *testing.T) {
	store := newMemoryStore()
	k := Key{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:1/mcp", Client: "c"}
	var requests atomic.Int32
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		cur, _ := store.Load(r.Context(), k)
		_ = store.write(r.Context(), k, Grant{Version: cur.Version + 1, Token: &Token{AccessToken: "theirs", RefreshToken: "r2", Expiry: time.Now().Add(time.Hour)}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
	}))
	defer as.Close()
	if _, err := store.Update(t.Context(), k, func(context.Context, Grant) (*Grant, error) {
		return &Grant{Token: &Token{AccessToken: "a1", RefreshToken: "r1", Expiry: time.Now().Add(-time.Second)}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	o := NewOAuth(mustParse(t, "http://127.0.0.1:1/mcp"), Config{ClientID: "c", Store: store}, Env{})
	defer o.Close()
	o.challenged = true
	o.disc = &discovery{resource: k.Resource}
	o.disc.as.Issuer, o.disc.as.TokenEndpoint = k.Issuer, as.URL+"/token"
	o.tok, o.ver = &Token{AccessToken: "a1", RefreshToken: "r1", Expiry: time.Now().Add(-time.Second)}, 1 // this process had it

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	tok, err := o.Token(ctx)
	if tok != "theirs" || err != nil || requests.Load() != 1 {
		t.Fatalf("got %q, %v after %d token requests; want the other holder's token after 1", tok, err, requests.Load())
	}
	if g, _ := store.Load(t.Context(), k); g.Token == nil || g.Token.AccessToken != "theirs" {
		t.Errorf("stored %+v; want the other holder's grant, not cleared", g.Token)
	}
	// Without the read, only the compare-and-swap would stop the clearing,
	// and the caller would wait out a backoff for a renewal counted failed.
	if _, failed, _ := o.Counts(); failed != 0 {
		t.Errorf("%d failed refreshes; want the other holder's token taken at once", failed)
	}
}

// SEP-837: a registration says what kind of client it is, from where the
// user's browser comes back to it.
func TestApplicationType(t *testing.T) {
	for uri, want := range map[string]string{
		"http://127.0.0.1:8976/callback":         "native",
		"http://localhost/cb":                    "native",
		"http://[::1]:9000/cb":                   "native",
		"https://127.0.0.1/cb":                   "native",
		"com.example.agent:/oauth2redirect":      "native",
		"https://agent.example.com/oauth/cb":     "web",
		"http://agent.internal.example:8080/cb":  "web",
		"http://127.0.0.1.example.com/not-local": "web",
	} {
		if got := applicationType(uri); got != want {
			t.Errorf("applicationType(%q) = %q; want %q", uri, got, want)
		}
	}
}
