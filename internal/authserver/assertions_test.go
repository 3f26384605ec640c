package authserver_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
)

// The identity provider's side: an ID token it issued to the requesting
// client becomes an ID-JAG; one issued to another client, expired, or
// signed by another server does not.
func TestTokenExchangeIssuesIDJAGs(t *testing.T) {
	idp := newRig(t, authserver.Config{ClientID: "idp-client", JAGClientID: "agent"})
	other := newRig(t, authserver.Config{})
	exchange := func(idToken string) tokenReply {
		return idp.token(t, url.Values{
			"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "client_id": {"idp-client"},
			"requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"},
			"subject_token":        {idToken}, "subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"},
			"audience": {"http://as.example"}, "resource": {"http://rs.example/mcp"},
		}, nil)
	}
	if got := exchange(idp.as.IDToken("alice", "idp-client", time.Minute)); got.status != http.StatusOK || got.AccessToken == "" || got.TokenType != "N_A" {
		t.Errorf("exchange of a good ID token: %+v", got)
	}
	for name, tok := range map[string]string{
		"another client's": idp.as.IDToken("alice", "someone-else", time.Minute),
		"expired":          idp.as.IDToken("alice", "idp-client", -time.Minute),
		"another server's": other.as.IDToken("alice", "idp-client", time.Minute),
		"not a JWT":        "garbage",
	} {
		if got := exchange(tok); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
			t.Errorf("exchange of %s ID token: %d %s; want 400 invalid_grant", name, got.status, got.Error)
		}
	}
	if n := idp.as.Stats().TokenExchanges; n != 1 {
		t.Errorf("%d exchanges counted; want 1", n)
	}
}

// The authorization server's side: a workload assertion from a trusted
// issuer, addressed to it and not expired, gets a token Protect accepts;
// any other is invalid_grant, and no token.
func TestJWTBearerGrantVerifiesAssertions(t *testing.T) {
	platform := newRig(t, authserver.Config{})
	stranger := newRig(t, authserver.Config{})
	r := newRig(t, authserver.Config{ClientID: "workload", TrustedIssuers: []*authserver.Server{platform.as}})
	grant := func(assertion string) tokenReply {
		return r.token(t, url.Values{
			"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "client_id": {"workload"},
			"assertion": {assertion}, "resource": {r.resource},
		}, nil)
	}
	got := grant(platform.as.WorkloadAssertion("build-1", r.as.URL(), time.Minute))
	if got.status != http.StatusOK || got.RefreshToken != "" {
		t.Fatalf("grant with a good assertion: %+v; want a token and no refresh token", got)
	}
	wantStatus(t, "a call with the granted token", r.call(t, "", got.AccessToken), http.StatusOK)
	for name, a := range map[string]string{
		"an untrusted issuer's": stranger.as.WorkloadAssertion("build-1", r.as.URL(), time.Minute),
		"another audience's":    platform.as.WorkloadAssertion("build-1", "http://elsewhere.example", time.Minute),
		"an expired":            platform.as.WorkloadAssertion("build-1", r.as.URL(), -time.Minute),
	} {
		if got := grant(a); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
			t.Errorf("grant with %s assertion: %d %s; want 400 invalid_grant", name, got.status, got.Error)
		}
	}
	if got := r.as.AssertionSubjects(); len(got) != 1 || got[0] != "build-1" {
		t.Errorf("accepted assertions for %v; want one, build-1's", got)
	}
}
