package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// failedCalls is an Observer that counts the calls reported failed.
type failedCalls struct {
	mu     sync.Mutex
	calls  int
	failed []string
}

func (f *failedCalls) StartCall(ctx context.Context, _ observe.CallInfo) context.Context { return ctx }
func (f *failedCalls) StartAttempt(ctx context.Context, _ observe.AttemptInfo) context.Context {
	return ctx
}
func (f *failedCalls) EndAttempt(context.Context, observe.AttemptEnd) {}
func (f *failedCalls) EndCall(_ context.Context, end observe.CallEnd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if end.ErrorType != "" && len(f.failed) < 5 {
		f.failed = append(f.failed, end.ErrorType)
	}
}
func (f *failedCalls) HandleEvent(observe.Server, observe.Event) {}

// F46: the MCP server (and the authorization server) want a DPoP nonce
// in every proof and rotate it under 16 goroutines, twice in a row every
// 100 ms, so that proofs in flight carry a nonce no longer taken and are
// answered use_dpop_nonce; tokens expire every second, so that refreshes
// meet the token endpoint's nonce too. Every call succeeds and none is
// reported failed; the server saw a fresh jti in every proof (a jti seen
// before is refused and counted), and no proof refused for another reason.
func TestF46DPoPNonceRotatedUnderLoad(t *testing.T) {
	const lifetime = time.Second
	obs := &failedCalls{}
	o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: lifetime, DPoP: true, DPoPNonce: true},
		testserver.Config{Era: testserver.SessionEra}, client.OAuthConfig{}, client.WithObserver(obs))
	began := time.Now()
	o.MustEcho("first") // authorized, with the nonces of both servers

	stop := make(chan struct{})
	var rotations sync.WaitGroup
	rotations.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range 1000 {
			select {
			case <-stop:
				return
			case <-tick.C:
				o.as.RotateDPoPNonces()
				o.as.RotateDPoPNonces()
			}
		}
	})
	cs := startCallers(o.Rig, 16)
	time.Sleep(2500 * time.Millisecond) // two expiries
	cs.halt()
	close(stop)
	rotations.Wait()

	st, cst := o.as.Stats(), o.C.Stats()
	obs.mu.Lock()
	observed, reported := obs.calls, obs.failed
	obs.mu.Unlock()
	t.Logf("%d calls; server: DPoP proofs %d, nonce challenges %d, replays %d, refused %d, bound tokens %d, refreshes %d; client: %+v",
		cs.calls.Load(), st.DPoPProofs, st.DPoPNonceChallenges, st.DPoPReplays, st.DPoPRefused, st.DPoPBoundTokens, st.Refreshes, cst)
	if n := cs.failed.Load(); n != 0 || cs.calls.Load() < 200 {
		t.Errorf("%d of %d calls failed, e.g. %v; want none of many", n, cs.calls.Load(), cs.errs)
	}
	if len(reported) != 0 || cst.Unavailable != 0 || cst.OutcomeUnknown != 0 || cst.AuthorizationRequired != 0 {
		t.Errorf("calls reported failed: observer %v, stats %+v; want none", reported, cst)
	}
	if observed < int(cs.calls.Load()) {
		t.Errorf("the observer saw %d calls of %d", observed, cs.calls.Load())
	}
	if st.DPoPReplays != 0 || st.DPoPRefused != 0 {
		t.Errorf("%d proofs replayed, %d refused otherwise; want a fresh, valid proof in every request", st.DPoPReplays, st.DPoPRefused)
	}
	if st.DPoPNonceChallenges < 20 {
		t.Errorf("%d nonce challenges; the test wants many, from both servers", st.DPoPNonceChallenges)
	}
	if st.DPoPProofs < cs.calls.Load() {
		t.Errorf("%d proofs accepted for %d calls; want one at least per call", st.DPoPProofs, cs.calls.Load())
	}
	// A nonce challenge is not a refused token: one refresh per expiry.
	if most := int64(time.Since(began)/(lifetime*8/10)) + 1; st.Refreshes < 2 || st.Refreshes > most || st.DPoPBoundTokens != st.TokensIssued {
		t.Errorf("%d refreshes, %d of %d tokens bound; want every token bound, refreshed once per expiry (2..%d)", st.Refreshes, st.DPoPBoundTokens, st.TokensIssued, most)
	}
}

// A DPoP-bound refresh token (a public client's, RFC 9449 §5) is used by
// another process, through a FileStore and through Redis: the key is kept
// with the grant, so the second process refreshes with a proof by the
// first one's key, and the user is not asked again. A process without the
// key would be refused (invalid_dpop_proof) and would have to ask the user.
func TestDPoPBoundRefreshTokenInAnotherProcess(t *testing.T) {
	const lifetime = time.Second
	for _, kind := range []string{"file", "redis"} {
		t.Run(kind, func(t *testing.T) {
			as, srv := rig.GuardedServer(t, authserver.Config{AccessTokenLifetime: lifetime, DPoP: true, DPoPNonce: true}, testserver.Config{Era: testserver.StatelessEra})
			store, _ := sharedStore(t, kind, false)
			env := map[string]string{"URL": srv.URL(), "STORE": store, "LEASE": "40s", "CALLERS": "0", "DEADLINE": "20s"}
			first := startReplica(t, env).finish()
			time.Sleep(lifetime + 200*time.Millisecond) // the access token expired
			second := startReplica(t, env).finish()
			st := as.Stats()
			t.Logf("first: %v calls/failed, user asked %d; second: %v, asked %d (%s); server: registrations %d, authorizations %d, refreshes %d, bound tokens %d of %d, proofs %d, refused %d, nonce challenges %d",
				first.phases["start"], first.asked, second.phases["start"], second.asked, second.firstErr,
				st.Registrations, st.Authorizations, st.Refreshes, st.DPoPBoundTokens, st.TokensIssued, st.DPoPProofs, st.DPoPRefused, st.DPoPNonceChallenges)
			if n := first.phases["start"]; n[0] != 1 || n[1] != 0 || first.asked != 1 {
				t.Fatalf("first process: %v calls/failed, user asked %d (%s); want one call that succeeds", n, first.asked, first.firstErr)
			}
			if n := second.phases["start"]; n[0] != 1 || n[1] != 0 || second.asked != 0 {
				t.Errorf("second process: %v calls/failed, user asked %d (%s); want the call to succeed, nobody asked", n, second.asked, second.firstErr)
			}
			if st.Registrations != 1 || st.Authorizations != 1 || st.Refreshes != 1 || st.DPoPRefused != 0 || st.ReuseDetected != 0 {
				t.Errorf("registrations %d, authorizations %d, refreshes %d, DPoP refused %d, reuses %d; want 1, 1, 1, 0, 0",
					st.Registrations, st.Authorizations, st.Refreshes, st.DPoPRefused, st.ReuseDetected)
			}
			if st.DPoPBoundTokens != 2 || st.TokensIssued != 2 {
				t.Errorf("%d of %d tokens bound; want both", st.DPoPBoundTokens, st.TokensIssued)
			}
		})
	}
}

// DPoP for every grant and as configured: the client_credentials grant
// (and the authorization code's refresh) with proofs and nonces; an
// Ed25519 crypto.Signer as the key; DPoPNever against a server that
// advertises DPoP, and DPoPAlways against one that ignores proofs, both
// with bearer tokens. Calls succeed through an expiry in each.
func TestDPoPGrantsAndModes(t *testing.T) {
	const lifetime = time.Second
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name  string
		as    authserver.Config
		oc    client.OAuthConfig
		bound bool
	}{
		{"client credentials", authserver.Config{DPoP: true, DPoPNonce: true, ClientID: "agent", ClientSecret: "s3cret"},
			client.OAuthConfig{ClientID: "agent", ClientSecret: "s3cret", GrantType: client.GrantClientCredentials}, true},
		{"Ed25519 signer", authserver.Config{DPoP: true, DPoPNonce: true}, client.OAuthConfig{DPoPKey: ed}, true},
		{"never", authserver.Config{DPoP: true}, client.OAuthConfig{DPoP: auth.DPoPNever}, false},
		{"always, ignored by the server", authserver.Config{}, client.OAuthConfig{DPoP: auth.DPoPAlways}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.as.AccessTokenLifetime = lifetime
			o := newOAuthRig(t, tc.as, testserver.Config{Era: testserver.StatelessEra}, tc.oc)
			o.MustEcho("first")
			time.Sleep(lifetime + 100*time.Millisecond)
			o.MustEcho("after an expiry")
			st := o.as.Stats()
			t.Logf("tokens %d (bound %d), refreshes %d, client credentials %d, proofs %d, nonce challenges %d, refused %d",
				st.TokensIssued, st.DPoPBoundTokens, st.Refreshes, st.ClientCredentials, st.DPoPProofs, st.DPoPNonceChallenges, st.DPoPRefused)
			want := int64(0)
			if tc.bound {
				want = st.TokensIssued
			}
			if st.TokensIssued < 2 || st.DPoPBoundTokens != want || st.DPoPRefused != 0 {
				t.Errorf("%d tokens, %d bound, %d proofs refused; want 2 or more, bound: %v, none refused", st.TokensIssued, st.DPoPBoundTokens, st.DPoPRefused, tc.bound)
			}
			if tc.bound && (st.DPoPProofs < 4 || (tc.as.DPoPNonce && st.DPoPNonceChallenges < 2)) {
				t.Errorf("%d proofs, %d nonce challenges; want proofs on token and MCP requests, and both servers' nonce asked", st.DPoPProofs, st.DPoPNonceChallenges)
			}
		})
	}
}

// The JWT bearer grant (workload identity) gets DPoP-bound tokens too: its
// token requests carry proofs, through both servers' nonces.
func TestDPoPWorkloadIdentity(t *testing.T) {
	const lifetime = time.Second
	platform, err := authserver.Start(authserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(platform.Close)
	as, srv := rig.GuardedServer(t, authserver.Config{ClientID: "workload", TrustedIssuers: []*authserver.Server{platform},
		AccessTokenLifetime: lifetime, DPoP: true, DPoPNonce: true}, testserver.Config{Era: testserver.SessionEra})
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(platform.WorkloadAssertion("agent-7", as.URL(), time.Minute)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{ClientID: "workload", Workload: &auth.WorkloadIdentity{AssertionFile: file}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &rig.Rig{T: t, Srv: srv, C: c}
	r.MustEcho("first")
	time.Sleep(lifetime + 100*time.Millisecond)
	r.MustEcho("after an expiry")
	st := as.Stats()
	t.Logf("JWT bearer grants %d, tokens %d (bound %d), proofs %d, nonce challenges %d, refused %d",
		st.JWTBearerGrants, st.TokensIssued, st.DPoPBoundTokens, st.DPoPProofs, st.DPoPNonceChallenges, st.DPoPRefused)
	if st.JWTBearerGrants < 2 || st.DPoPBoundTokens != st.TokensIssued || st.DPoPRefused != 0 || st.DPoPNonceChallenges < 2 {
		t.Errorf("%d JWT bearer grants, %d of %d tokens bound, %d refused, %d nonce challenges; want 2 or more grants, all bound, none refused, both servers' nonces asked",
			st.JWTBearerGrants, st.DPoPBoundTokens, st.TokensIssued, st.DPoPRefused, st.DPoPNonceChallenges)
	}
}
