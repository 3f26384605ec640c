package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F45: a mix-up (RFC 9207). The resource sends the client to an honest
// authorization server; the user's browser comes back with an answer of a
// second, malicious one (a code it issued, its iss, or no iss at all), or
// the honest server's metadata names another issuer. The client refuses:
// ErrAuthorizationRequired with reason issuer_mismatch, no token request
// reaches either server, and the call did not run.
func TestF45MixUpIsRefused(t *testing.T) {
	const clientID = "agent" // pre-registered at both, so each would take the code
	toEvil := func(evil *authserver.Server, keepIss bool) func(context.Context, string) (string, error) {
		return func(ctx context.Context, authURL string) (string, error) {
			u, err := url.Parse(authURL)
			if err != nil {
				return "", err
			}
			e, _ := url.Parse(evil.URL())
			u.Scheme, u.Host = e.Scheme, e.Host // the attacker's authorization endpoint
			loc, err := authserver.Approve(ctx, u.String())
			if err != nil || keepIss {
				return loc, err
			}
			back, err := url.Parse(loc)
			if err != nil {
				return "", err
			}
			q := back.Query()
			if q.Get("iss") != evil.URL() || q.Get("code") == "" {
				t.Errorf("the malicious server answered %q: want a code and its iss", loc)
			}
			q.Del("iss")
			back.RawQuery = q.Encode()
			return back.String(), nil
		}
	}
	cases := []struct {
		name   string
		honest authserver.Config
		// browser is where the user's answer comes from, given the evil server.
		browser func(evil *authserver.Server) func(context.Context, string) (string, error)
	}{
		{"the answer names another issuer", authserver.Config{}, func(evil *authserver.Server) func(context.Context, string) (string, error) {
			return toEvil(evil, true)
		}},
		{"the answer has no iss where it was promised", authserver.Config{}, func(evil *authserver.Server) func(context.Context, string) (string, error) {
			return toEvil(evil, false)
		}},
		{"an iss of another issuer where none was promised", authserver.Config{NoIssParameter: true}, func(evil *authserver.Server) func(context.Context, string) (string, error) {
			return toEvil(evil, true)
		}},
		{"the metadata names another issuer", authserver.Config{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evil, err := authserver.Start(authserver.Config{ClientID: clientID})
			if err != nil {
				t.Fatal(err)
			}
			defer evil.Close()
			honestCfg := tc.honest
			honestCfg.ClientID = clientID
			var browser rig.Browser
			authorize := browser.Authorize
			if tc.browser != nil {
				authorize = tc.browser(evil)
			} else {
				honestCfg.MetadataIssuer = evil.URL()
			}
			honest, srv := rig.GuardedServer(t, honestCfg, testserver.Config{Era: testserver.StatelessEra})
			evil.Protect(srv.URL(), http.NotFoundHandler()) // it would issue codes for the resource

			var opened atomic.Int32
			c, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{
				ClientID:    clientID,
				RedirectURI: "http://127.0.0.1:8976/callback",
				Authorize: func(ctx context.Context, authURL string) (string, error) {
					opened.Add(1)
					return authorize(ctx, authURL)
				},
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = rig.CallTool(ctx, c, "increment", nil)
			var ae *client.AuthorizationRequiredError
			if !errors.Is(err, client.ErrAuthorizationRequired) || !errors.As(err, &ae) || ae.Reason != auth.ReasonIssuerMismatch {
				t.Fatalf("call = %v; want ErrAuthorizationRequired (%s)", err, auth.ReasonIssuerMismatch)
			}
			if errors.Is(err, client.ErrOutcomeUnknown) {
				t.Errorf("call = %v: it did not run, yet it says it may have", err)
			}
			hs, es := honest.Stats(), evil.Stats()
			if hs.TokenRequests != 0 || es.TokenRequests != 0 {
				t.Errorf("token requests: %d at the honest server, %d at the malicious one; want none", hs.TokenRequests, es.TokenRequests)
			}
			if runs := srv.ToolRuns("increment"); runs != 0 {
				t.Errorf("increment ran %d times; want 0", runs)
			}
			if tc.browser == nil && (opened.Load() != 0 || hs.Registrations != 0) {
				t.Errorf("with poisoned metadata the user was asked %d times and %d registrations made; want none: its endpoints are not to be used",
					opened.Load(), hs.Registrations)
			}
			if tc.browser != nil && opened.Load() != 1 {
				t.Errorf("the user was asked %d times; want 1 (a refused answer is not asked for again on its own)", opened.Load())
			}
		})
	}
}

// RFC 9207 on the honest path: an iss equal to the issuer is taken, and a
// server from before RFC 9207 (no iss, none promised) still authorizes.
func TestAuthorizationResponseIssuerAccepted(t *testing.T) {
	for _, noIss := range []bool{false, true} {
		t.Run(map[bool]string{false: "iss sent", true: "no iss, none promised"}[noIss], func(t *testing.T) {
			o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: time.Minute, NoIssParameter: noIss},
				testserver.Config{Era: testserver.StatelessEra}, client.OAuthConfig{})
			if err := o.Increment(); err != nil {
				t.Fatal(err)
			}
			if st := o.as.Stats(); st.Authorizations != 1 || st.TokensIssued != 1 {
				t.Errorf("authorizations %d, tokens %d; want 1 and 1", st.Authorizations, st.TokensIssued)
			}
		})
	}
}

// SEP-2352: the resource moves to another authorization server while 16
// goroutines call it and its tokens expire and are refreshed. The old
// server's tokens are refused from then on; the client looks again where
// the resource sends it, registers once at the new server (never showing
// it the old client or refresh token), and every call succeeds. The old
// grant stays in the Store, untouched.
func TestSEP2352AuthorizationServerMigration(t *testing.T) {
	const goroutines = 16
	oldAS, err := authserver.Start(authserver.Config{AccessTokenLifetime: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer oldAS.Close()
	newAS, err := authserver.Start(authserver.Config{AccessTokenLifetime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer newAS.Close()
	var moved atomic.Bool
	cfg := testserver.Config{Era: testserver.StatelessEra}
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg.Guard = func(next http.Handler) http.Handler {
		before, after := oldAS.Protect(srv.URL(), next), newAS.Protect(srv.URL(), next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if moved.Load() {
				after.ServeHTTP(w, r)
				return
			}
			before.ServeHTTP(w, r)
		})
	}
	srv.Reconfigure(cfg)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}

	store := auth.NewMemoryStore()
	var browser rig.Browser
	const redirect = "http://127.0.0.1:8976/callback"
	c, err := client.New(srv.URL(), client.WithPoolSize(2), client.WithOAuth(client.OAuthConfig{
		RedirectURI: redirect, Authorize: browser.Authorize, Store: store,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := &rig.Rig{T: t, Srv: srv, C: c}
	r.MustEcho("authorized at the old server")

	cs := startCallers(r, goroutines)
	time.Sleep(700 * time.Millisecond) // a refresh at the old server
	moved.Store(true)
	time.Sleep(700 * time.Millisecond)
	cs.halt()
	r.MustEcho("at the new server")

	oldSt, newSt := oldAS.Stats(), newAS.Stats()
	t.Logf("%d calls; old server %+v; new server %+v", cs.calls.Load(), oldSt, newSt)
	if n := cs.failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed, e.g. %v", n, cs.calls.Load(), cs.errs)
	}
	if oldSt.Refreshes < 1 {
		t.Error("no refresh at the old server before the move: the test did not provoke a refresh")
	}
	if newSt.Registrations != 1 || newSt.Authorizations != 1 {
		t.Errorf("at the new server: %d registrations, %d authorizations; want 1 and 1", newSt.Registrations, newSt.Authorizations)
	}
	if newSt.TokenRequests != 1 {
		t.Errorf("%d token requests at the new server; want 1, the code's exchange (no refresh token of the old server spent there)", newSt.TokenRequests)
	}
	old, err := store.Load(context.Background(), auth.Key{Issuer: oldAS.URL(), Resource: srv.URL(), Client: "dynamic " + redirect})
	if err != nil || old.Token == nil || old.Registration == nil {
		t.Errorf("the old server's grant in the Store: %+v, %v; want it left alone", old, err)
	}
}
