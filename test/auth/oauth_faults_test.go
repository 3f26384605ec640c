package auth

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F20 with OAuth: "all tokens invalid now". 64 goroutines calling the
// non-idempotent increment meet the 401 together: one refresh for all,
// every call sent again with the new token and run exactly once.
func TestF20OAuthAllTokensInvalidNowRefreshesOnceForAll(t *testing.T) {
	const goroutines = 64
	o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: time.Minute}, testserver.Config{Era: testserver.SessionEra}, client.OAuthConfig{}, client.WithPoolSize(4))
	o.Start()
	o.MustEcho("authorized")
	before := o.as.Stats()
	o.as.InvalidateAccessTokens()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			if err := o.Increment(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	after := o.as.Stats()
	if runs := o.Srv.ToolRuns("increment"); runs != goroutines {
		t.Errorf("increment ran %d times for %d calls", runs, goroutines)
	}
	if n := after.Refreshes - before.Refreshes; n != 1 || after.ReuseDetected != 0 {
		t.Errorf("%d refreshes, %d reuses for one invalidation; want 1 and 0", n, after.ReuseDetected)
	}
	if after.Refused401-before.Refused401 < 1 {
		t.Error("no request was refused: the test did not provoke anything")
	}
}

// F22: the grant is revoked. Calls fail at once with
// ErrAuthorizationRequired (invalid_grant) and did not run; one
// authorization starts in the background (the user is asked once however
// many calls failed) and later calls use its token. A denied authorization
// is not asked again on its own: Authorize recovers.
func TestF22OAuthGrantLost(t *testing.T) {
	o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: time.Minute}, testserver.Config{Era: testserver.StatelessEra}, client.OAuthConfig{})
	o.MustEcho("authorized")
	o.as.Revoke()
	var ae *client.AuthorizationRequiredError
	if err := o.Increment(); !errors.As(err, &ae) || ae.Reason != "invalid_grant" {
		t.Fatalf("call after the revocation = %v; want ErrAuthorizationRequired (invalid_grant)", err)
	}
	rig.Eventually(t, "the background authorization to give a token", func() bool { return o.Increment() == nil })
	if runs, opened := o.Srv.ToolRuns("increment"), o.browser.Opened.Load(); runs != 1 || opened != 2 {
		t.Errorf("increment ran %d times (want 1: the call that succeeded); the user was asked %d times (want 2)", runs, opened)
	}

	// Revoked again, and this time the user declines.
	o.as.SetDeny(true)
	o.as.Revoke()
	for range 5 {
		if err := o.Increment(); !errors.Is(err, client.ErrAuthorizationRequired) {
			t.Fatalf("call while the grant is lost = %v", err)
		}
	}
	rig.Eventually(t, "the declined authorization to end", func() bool {
		err := o.Increment()
		return errors.As(err, &ae) && ae.Reason == "denied"
	})
	time.Sleep(100 * time.Millisecond)
	if opened := o.browser.Opened.Load(); opened != 3 {
		t.Errorf("the user was asked %d times in all; want 3 (no retry of a declined authorization)", opened)
	}
	o.as.SetDeny(false)
	if err := o.C.Authorize(o.Ctx()); err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	if err := o.Increment(); err != nil {
		t.Errorf("after Authorize: %v", err)
	}
	if runs := o.Srv.ToolRuns("increment"); runs != 2 {
		t.Errorf("increment ran %d times; want 2", runs)
	}
}

// F23: the authorization server is down when the token expires. A call
// whose deadline passes while it waits gets ErrUnavailable (it did not
// run), not ErrAuthorizationRequired; token requests are paced by one
// backoff; calls succeed when the server is back.
func TestF23OAuthServerDownWhenTheTokenExpires(t *testing.T) {
	o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: time.Second}, testserver.Config{Era: testserver.SessionEra}, client.OAuthConfig{})
	o.Start()
	o.MustEcho("authorized")
	o.as.SetDown(true)
	time.Sleep(1200 * time.Millisecond) // the token expires
	callsWaitOutAnOutage(t, o.Rig)
	down := o.as.Stats().TokenRequestsWhileDown
	o.as.SetDown(false)
	if err := o.Increment(); err != nil {
		t.Errorf("after the outage: %v", err)
	}
	if down > 8 || down < 1 {
		t.Errorf("%d token requests during ~1.7 s of outage by 16 callers; want a few, paced by one backoff", down)
	}
}

// F24: step-up. The server wants mcp:write, also on initialize, from a
// client configured for mcp:read: one more authorization with the union of
// scopes, then success. A scope the authorization server refuses ends in
// *InsufficientScopeError, and is not asked for again.
func TestF24OAuthStepUp(t *testing.T) {
	o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: time.Minute}, testserver.Config{Era: testserver.SessionEra},
		client.OAuthConfig{Scopes: []string{"mcp:read"}})
	o.as.RequireScopes("mcp:write")
	o.Start()
	o.MustEcho("stepped up")
	if n := o.browser.Opened.Load(); n != 2 || o.as.Stats().Refused403 < 1 {
		t.Errorf("the user was asked %d times, %d requests refused with 403; want 2 and at least 1", n, o.as.Stats().Refused403)
	}

	o.as.RequireScopes("mcp:admin") // not a scope the authorization server grants
	var ise *client.InsufficientScopeError
	for i := range 3 {
		err := o.Increment()
		if !errors.As(err, &ise) || !slices.Contains(ise.Scopes, "mcp:admin") {
			t.Fatalf("call %d wanting mcp:admin = %v; want *InsufficientScopeError", i, err)
		}
	}
	if n := o.browser.Opened.Load(); n != 3 {
		t.Errorf("the user was asked %d times in all; want 3 (one refused step-up, not repeated)", n)
	}
	if runs := o.Srv.ToolRuns("increment"); runs != 0 {
		t.Errorf("increment ran %d times", runs)
	}
}

// The client_credentials grant: no user; a new token at each expiry,
// once for all goroutines.
func TestOAuthClientCredentials(t *testing.T) {
	const lifetime = time.Second
	for _, method := range []string{"client_secret_basic", "client_secret_post"} {
		t.Run(method, func(t *testing.T) {
			o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: lifetime, ClientID: "agent", ClientSecret: "s3cret"}, testserver.Config{Era: testserver.StatelessEra},
				client.OAuthConfig{ClientID: "agent", ClientSecret: "s3cret", GrantType: client.GrantClientCredentials, TokenEndpointAuthMethod: method})
			began := time.Now()
			cs := startCallers(o.Rig, 16)
			time.Sleep(2500 * time.Millisecond)
			cs.halt()
			active := time.Since(began)
			st := o.as.Stats()
			if cs.failed.Load() != 0 {
				t.Errorf("%d calls failed: %v", cs.failed.Load(), cs.errs)
			}
			if most := int64(active/(lifetime*8/10)) + 2; st.ClientCredentials < 2 || st.ClientCredentials > most || st.Authorizations != 0 {
				t.Errorf("%d client_credentials grants and %d authorizations in %v; want one grant per expiry (2..%d), no authorization",
					st.ClientCredentials, st.Authorizations, active.Round(time.Millisecond), most)
			}
		})
	}
}

// F11 with OAuth but nothing to authorize with: ErrAuthorizationRequired
// (no_token) at once, no token request.
func TestOAuthWithoutAWayToAuthorize(t *testing.T) {
	as, srv := rig.GuardedServer(t, authserver.Config{}, testserver.Config{Era: testserver.StatelessEra})
	c, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = rig.CallTool(ctx, c, "increment", nil)
	var ae *client.AuthorizationRequiredError
	if !errors.As(err, &ae) || ae.Reason != "no_token" {
		t.Errorf("err = %v; want ErrAuthorizationRequired (no_token)", err)
	}
	if st := as.Stats(); st.TokenRequests != 0 || srv.ToolRuns("increment") != 0 {
		t.Errorf("%d token requests, increment ran %d times; want none", st.TokenRequests, srv.ToolRuns("increment"))
	}
}

func TestOAuthOptionsRejected(t *testing.T) {
	for name, opts := range map[string][]client.Option{
		"both token sources":                  {client.WithOAuth(client.OAuthConfig{}), client.WithBearerToken(func(context.Context, string) (string, error) { return "t", nil })},
		"Authorize without RedirectURI":       {client.WithOAuth(client.OAuthConfig{Authorize: func(context.Context, string) (string, error) { return "", nil }})},
		"client_credentials without ClientID": {client.WithOAuth(client.OAuthConfig{GrantType: client.GrantClientCredentials})},
	} {
		if c, err := client.New("http://127.0.0.1:1/mcp", opts...); err == nil {
			c.Close()
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// A token kept in the TokenStore outlives the client: a new client (a
// restarted agent) with the same store and client ID calls without asking
// the user, and refreshes with the stored refresh token.
func TestOAuthTokenStoreOutlivesTheClient(t *testing.T) {
	const lifetime = time.Second
	o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: lifetime, ClientID: "agent"}, testserver.Config{Era: testserver.StatelessEra},
		client.OAuthConfig{ClientID: "agent"})
	o.MustEcho("first process")
	o.C.Close()
	c, err := client.New(o.Srv.URL(), client.WithOAuth(client.OAuthConfig{ClientID: "agent", TokenStore: o.store,
		RedirectURI: "http://127.0.0.1:8976/callback", Authorize: o.browser.Authorize}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := rig.CallTool(o.Ctx(), c, "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatalf("with the stored token: %v", err)
	}
	time.Sleep(lifetime + 200*time.Millisecond)
	if _, err := rig.CallTool(o.Ctx(), c, "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatalf("after the stored token expired: %v", err)
	}
	if st := o.as.Stats(); o.browser.Opened.Load() != 1 || st.Refreshes != 1 || st.ReuseDetected != 0 {
		t.Errorf("user asked %d times, %d refreshes, %d reuses; want 1, 1, 0", o.browser.Opened.Load(), st.Refreshes, st.ReuseDetected)
	}
}

// F33 in one process: two clients share a Store, as two replicas do. The
// server drops every token it issued; B meets it first and refreshes. It
// drops every token again. A, still holding the first token, meets the 401
// and takes B's token from the Store, which was issued before that second
// drop and is refused too: it was not obtained after A's refusal, so A
// renews once more, and its call runs once. (A loaded run of
// TestF33ReplicasShareOneGrant met this: 4 calls of 3982 ended
// "token_rejected", the transport taking B's token for one just obtained.)
func TestOAuthAStoredTokenRefusedTooIsRenewed(t *testing.T) {
	as, srv := rig.GuardedServer(t, authserver.Config{AccessTokenLifetime: time.Hour}, testserver.Config{Era: testserver.StatelessEra})
	store := auth.NewMemoryStore()
	browser := &rig.Browser{}
	replica := func() *rig.Rig {
		c, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{
			RedirectURI: "http://127.0.0.1:8976/callback", Authorize: browser.Authorize, Store: store,
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &rig.Rig{T: t, Srv: srv, C: c}
	}
	a, b := replica(), replica()
	a.MustEcho("A: the user authorizes")
	b.MustEcho("B: the grant from the Store")
	as.InvalidateAccessTokens()
	b.MustEcho("B: refreshed")
	as.InvalidateAccessTokens()

	before, runs := as.Stats(), srv.ToolRuns("increment")
	if err := a.Increment(); err != nil {
		t.Fatalf("A's call after the second drop = %v; want success", err)
	}
	after := as.Stats()
	if n := srv.ToolRuns("increment") - runs; n != 1 {
		t.Errorf("increment ran %d times, want 1", n)
	}
	if n := after.Refused401 - before.Refused401; n != 2 {
		t.Errorf("%d requests refused, want 2: the first token and B's", n)
	}
	if n := after.Refreshes - before.Refreshes; n != 1 || after.ReuseDetected != 0 || after.Authorizations != 1 || browser.Opened.Load() != 1 {
		t.Errorf("%d refreshes, %d reuses, %d authorizations (user asked %d times); want 1, 0, 1, 1", n, after.ReuseDetected, after.Authorizations, browser.Opened.Load())
	}
}

// callsWaitOutAnOutage makes 16 calls of the non-idempotent increment,
// each with 500 ms to live, while the server that gives tokens is down:
// each must end ErrUnavailable (it did not run), never
// ErrAuthorizationRequired or ErrOutcomeUnknown, and none may have run.
func callsWaitOutAnOutage(t *testing.T, r *rig.Rig) {
	t.Helper()
	var wg sync.WaitGroup
	var unavailable atomic.Int32
	for range 16 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := rig.CallTool(ctx, r.C, "increment", nil)
			if errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrAuthorizationRequired) && !errors.Is(err, client.ErrOutcomeUnknown) {
				unavailable.Add(1)
			} else {
				t.Errorf("call during the outage = %v; want ErrUnavailable", err)
			}
		})
	}
	wg.Wait()
	if runs := r.Srv.ToolRuns("increment"); runs != 0 || unavailable.Load() != 16 {
		t.Errorf("increment ran %d times, %d calls were ErrUnavailable; want 0 and 16", runs, unavailable.Load())
	}
}
