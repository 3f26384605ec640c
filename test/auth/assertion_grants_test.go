package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Enterprise-managed authorization and workload identity against two
// loopback servers: the enterprise's identity provider (or the workload's
// platform), and the MCP server's authorization server, which trusts it.

const (
	agentID     = "agent" // the client at the MCP server's authorization server
	agentSecret = "agent-s3cret"
	idpClientID = "idp-agent" // the same client at the identity provider
)

// emaRig is a test server whose authorization server takes ID-JAGs from
// idp, and a client with Enterprise set.
type emaRig struct {
	*rig.Rig
	idp, as  *authserver.Server
	idTokens atomic.Int32 // IDToken calls
}

func newEMARig(t *testing.T, idpCfg, asCfg authserver.Config, endpoint bool) *emaRig {
	t.Helper()
	idpCfg.ClientID, idpCfg.JAGClientID = idpClientID, agentID
	idp, err := authserver.Start(idpCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(idp.Close)
	asCfg.ClientID, asCfg.ClientSecret, asCfg.TrustedIssuers = agentID, agentSecret, []*authserver.Server{idp}
	as, srv := rig.GuardedServer(t, asCfg, testserver.Config{Era: testserver.SessionEra})
	e := &emaRig{idp: idp, as: as}
	ent := &auth.EnterpriseAuthorization{
		IDToken: func(context.Context) (string, error) {
			e.idTokens.Add(1)
			return idp.IDToken("alice", idpClientID, time.Hour), nil
		},
		ClientID: idpClientID,
	}
	if endpoint {
		ent.TokenEndpoint = idp.URL() + "/token"
	} else {
		ent.Issuer = idp.URL() // discovered
	}
	c, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{ClientID: agentID, ClientSecret: agentSecret, Enterprise: ent}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.Rig = &rig.Rig{T: t, Srv: srv, C: c}
	return e
}

// The first call is authorized with no user: the ID token is exchanged
// at the identity provider for an ID-JAG, the ID-JAG for an access token
// at the authorization server, and the call runs once. When the server
// drops every token, the ID-JAG (valid for 5 min) is presented again: no
// second exchange.
func TestEnterpriseManagedAuthorization(t *testing.T) {
	e := newEMARig(t, authserver.Config{}, authserver.Config{AccessTokenLifetime: time.Minute}, false)
	if err := e.Increment(); err != nil {
		t.Fatalf("first call: %v", err)
	}
	idp, as := e.idp.Stats(), e.as.Stats()
	if idp.TokenExchanges != 1 || as.JWTBearerGrants != 1 || as.Authorizations != 0 || as.Registrations != 0 || e.idTokens.Load() != 1 {
		t.Errorf("exchanges %d, JWT bearer grants %d, browser authorizations %d, registrations %d, ID tokens %d; want 1, 1, 0, 0, 1",
			idp.TokenExchanges, as.JWTBearerGrants, as.Authorizations, as.Registrations, e.idTokens.Load())
	}
	if got := e.as.AssertionSubjects(); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("the authorization server took assertions for %v; want alice's", got)
	}

	e.as.InvalidateAccessTokens()
	if err := e.Increment(); err != nil {
		t.Fatalf("call after every token was dropped: %v", err)
	}
	idp, as = e.idp.Stats(), e.as.Stats()
	if idp.TokenExchanges != 1 || as.JWTBearerGrants != 2 {
		t.Errorf("exchanges %d, JWT bearer grants %d after the drop; want 1 (the ID-JAG presented again) and 2", idp.TokenExchanges, as.JWTBearerGrants)
	}
	if as.Refused401 < 1 {
		t.Error("no request was refused: the test did not provoke anything")
	}
	if runs := e.Srv.ToolRuns("increment"); runs != 2 {
		t.Errorf("increment ran %d times for 2 calls", runs)
	}
}

// An authorization server that takes each ID-JAG once refuses the one
// presented again after it dropped every token: the client asks the
// identity provider for a new one, once, and the call succeeds.
func TestEnterpriseSingleUseIDJAG(t *testing.T) {
	e := newEMARig(t, authserver.Config{}, authserver.Config{AccessTokenLifetime: time.Minute, SingleUseAssertions: true}, true)
	e.MustEcho("authorized")
	e.as.InvalidateAccessTokens()
	if err := e.Increment(); err != nil {
		t.Fatalf("call after every token was dropped: %v", err)
	}
	idp, as := e.idp.Stats(), e.as.Stats()
	if idp.TokenExchanges != 2 || as.JWTBearerGrants != 2 || as.TokenRequests != 3 {
		t.Errorf("exchanges %d, grants %d, token requests %d; want 2, 2 and 3 (the refused ID-JAG, then a new one)", idp.TokenExchanges, as.JWTBearerGrants, as.TokenRequests)
	}
	if runs := e.Srv.ToolRuns("increment"); runs != 1 {
		t.Errorf("increment ran %d times; want 1", runs)
	}
}

// 32 goroutines call through several expiries of a 1 s token, with
// ID-JAGs too short-lived to present again: each renewal is one exchange
// and one grant for all of them, and no call fails.
func TestEnterpriseOneRenewalForAllCallers(t *testing.T) {
	const lifetime = time.Second
	// An ID-JAG of 20 s: under a loaded run, one of 1 s expired between its
	// exchange and its grant ("assertion is expired"). It is still
	// exchanged anew for every grant: the client keeps one only while it
	// has more than 30 s left.
	e := newEMARig(t, authserver.Config{JAGLifetime: 20 * time.Second}, authserver.Config{AccessTokenLifetime: lifetime}, true)
	e.MustEcho("authorized")
	began := time.Now()
	cs := startCallers(e.Rig, 32)
	time.Sleep(2500 * time.Millisecond)
	cs.halt()
	active := time.Since(began)
	idp, as := e.idp.Stats(), e.as.Stats()
	t.Logf("%d calls in %v; exchanges %d, grants %d, ID tokens %d", cs.calls.Load(), active.Round(time.Millisecond), idp.TokenExchanges, as.JWTBearerGrants, e.idTokens.Load())
	if n := cs.failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed, e.g. %v", n, cs.calls.Load(), cs.errs)
	}
	// One renewal per expiry (a token lives ~0.9 s before it is renewed),
	// plus the first.
	if most := int64(active/(lifetime*8/10)) + 2; as.JWTBearerGrants > most || as.JWTBearerGrants < 3 {
		t.Errorf("%d JWT bearer grants in %v; want one per expiry (3..%d)", as.JWTBearerGrants, active.Round(time.Millisecond), most)
	}
	if idp.TokenExchanges != as.JWTBearerGrants || int64(e.idTokens.Load()) != idp.TokenExchanges {
		t.Errorf("%d exchanges, %d ID tokens asked for %d grants; want one each per grant", idp.TokenExchanges, e.idTokens.Load(), as.JWTBearerGrants)
	}
}

// The identity provider is down when the token expires. Calls wait within
// their deadline, then fail with ErrUnavailable (they did not run); the
// exchanges are paced by one backoff; calls succeed when it is back.
func TestEnterpriseIdentityProviderDown(t *testing.T) {
	e := newEMARig(t, authserver.Config{JAGLifetime: time.Second}, authserver.Config{AccessTokenLifetime: time.Second}, true)
	e.MustEcho("authorized")
	e.idp.SetDown(true)
	time.Sleep(1200 * time.Millisecond) // the token and the ID-JAG expire
	callsWaitOutAnOutage(t, e.Rig)
	down := e.idp.Stats().TokenRequestsWhileDown
	grants := e.as.Stats().JWTBearerGrants
	e.idp.SetDown(false)
	if err := e.Increment(); err != nil {
		t.Errorf("after the outage: %v", err)
	}
	if down > 8 || down < 1 {
		t.Errorf("%d exchanges during ~1.7 s of outage by 16 callers; want a few, paced by one backoff", down)
	}
	if after := e.as.Stats().JWTBearerGrants; after != grants+1 {
		t.Errorf("%d JWT bearer grants after the outage; want 1", after-grants)
	}
}

// wifRig is a test server whose authorization server takes the assertions
// of platform, and a client whose workload's assertion is in file.
type wifRig struct {
	*rig.Rig
	platform, as *authserver.Server
	file         string
}

func newWIFRig(t *testing.T, lifetime time.Duration) *wifRig {
	t.Helper()
	platform, err := authserver.Start(authserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(platform.Close)
	as, srv := rig.GuardedServer(t, authserver.Config{ClientID: "workload", TrustedIssuers: []*authserver.Server{platform}, AccessTokenLifetime: lifetime},
		testserver.Config{Era: testserver.SessionEra})
	w := &wifRig{platform: platform, as: as, file: filepath.Join(t.TempDir(), "token")}
	c, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{ClientID: "workload", Workload: &auth.WorkloadIdentity{AssertionFile: w.file}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w.Rig = &rig.Rig{T: t, Srv: srv, C: c}
	return w
}

// rotate writes the platform's assertion for subject as a platform does:
// a new file renamed over the old one.
func (w *wifRig) rotate(subject string, lifetime time.Duration) {
	w.T.Helper()
	tmp := w.file + ".new"
	if err := os.WriteFile(tmp, []byte(w.platform.WorkloadAssertion(subject, w.as.URL(), lifetime)+"\n"), 0o600); err != nil {
		w.T.Fatal(err)
	}
	if err := os.Rename(tmp, w.file); err != nil {
		w.T.Fatal(err)
	}
}

// The platform rotates the workload's assertion file: the renewal after
// the rotation presents the new assertion, and no call fails.
func TestWorkloadIdentityAssertionRotates(t *testing.T) {
	w := newWIFRig(t, time.Second)
	w.rotate("build-1", time.Hour)
	w.MustEcho("authorized")
	w.rotate("build-2", time.Hour)
	time.Sleep(1100 * time.Millisecond) // the token expires
	w.MustEcho("after the rotation")
	got := w.as.AssertionSubjects()
	if len(got) < 2 || got[0] != "build-1" || got[len(got)-1] != "build-2" {
		t.Errorf("assertions presented for %v; want build-1's, then build-2's", got)
	}
	if st := w.as.Stats(); st.Registrations != 0 || st.Authorizations != 0 {
		t.Errorf("%d registrations, %d browser authorizations; want none", st.Registrations, st.Authorizations)
	}
}

// An expired assertion is refused: the call fails with
// ErrAuthorizationRequired (invalid_grant) and did not run, and later
// calls fail at once without sending it again. Once the platform rotated
// the file, the next call presents the new assertion and succeeds.
func TestWorkloadIdentityRefusedAssertionIsNotSentAgain(t *testing.T) {
	w := newWIFRig(t, time.Minute)
	w.rotate("build-1", -time.Minute)
	var ae *client.AuthorizationRequiredError
	if err := w.Increment(); !errors.As(err, &ae) || ae.Reason != "invalid_grant" {
		t.Fatalf("call with an expired assertion = %v; want ErrAuthorizationRequired (invalid_grant)", err)
	}
	requests := w.as.Stats().TokenRequests
	for range 5 {
		if err := w.Increment(); !errors.Is(err, client.ErrAuthorizationRequired) {
			t.Fatalf("call while the grant is refused = %v", err)
		}
	}
	if after := w.as.Stats().TokenRequests; after != requests {
		t.Errorf("%d token requests after the refusal; want none", after-requests)
	}
	w.rotate("build-2", time.Hour)
	if err := w.Increment(); err != nil {
		t.Errorf("after the rotation: %v", err)
	}
	if runs, got := w.Srv.ToolRuns("increment"), w.as.AssertionSubjects(); runs != 1 || !slices.Equal(got, []string{"build-2"}) {
		t.Errorf("increment ran %d times, assertions taken for %v; want 1, build-2's", runs, got)
	}
}

// Two clients (two processes, as far as the grant knows) share a
// FileStore: every renewal runs under its lock, and the second finds the
// token the first obtained. One JWT bearer grant per expiry between them,
// not one each, and no call fails.
func TestWorkloadIdentitySharedStore(t *testing.T) {
	const lifetime = time.Second
	w := newWIFRig(t, lifetime)
	w.rotate("build-1", time.Hour)
	store, err := auth.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var rigs []*rig.Rig
	for range 2 {
		c, err := client.New(w.Srv.URL(), client.WithOAuth(client.OAuthConfig{ClientID: "workload", Store: store,
			Workload: &auth.WorkloadIdentity{AssertionFile: w.file}}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r := &rig.Rig{T: t, Srv: w.Srv, C: c}
		r.MustEcho("authorized")
		rigs = append(rigs, r)
	}
	began := time.Now()
	a, b := startCallers(rigs[0], 8), startCallers(rigs[1], 8)
	time.Sleep(2500 * time.Millisecond)
	a.halt()
	b.halt()
	active := time.Since(began)
	grants := w.as.Stats().JWTBearerGrants
	t.Logf("%d calls in %v; %d JWT bearer grants", a.calls.Load()+b.calls.Load(), active.Round(time.Millisecond), grants)
	if n := a.failed.Load() + b.failed.Load(); n != 0 {
		t.Errorf("%d calls failed, e.g. %v %v", n, a.errs, b.errs)
	}
	// The first grant, then one per expiry (a token lives ~0.9 s).
	if most := int64(active/(lifetime*8/10)) + 2; grants > most || grants < 3 {
		t.Errorf("%d JWT bearer grants for two clients in %v; want one per expiry between them (3..%d)", grants, active.Round(time.Millisecond), most)
	}
}
