package auth

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A JWT bearer grant configuration that cannot work is an error from
// Validate, before any request.
func TestValidateAssertionGrants(t *testing.T) {
	idToken := func(context.Context) (string, error) { return "id", nil }
	ent := &EnterpriseAuthorization{IDToken: idToken, TokenEndpoint: "https://idp.example/token"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"enterprise", Config{ClientID: "agent", Enterprise: ent}, nil},
		{"enterprise by issuer", Config{ClientID: "agent", Enterprise: &EnterpriseAuthorization{IDToken: idToken, Issuer: "https://idp.example"}}, nil},
		{"workload file", Config{Workload: &WorkloadIdentity{AssertionFile: "/var/run/token"}}, nil},
		{"workload func", Config{GrantType: GrantJWTBearer, Workload: &WorkloadIdentity{Assertion: idToken}}, nil},
		{"both", Config{ClientID: "agent", Enterprise: ent, Workload: &WorkloadIdentity{AssertionFile: "f"}}, ErrEnterpriseAndWorkload},
		{"enterprise without ClientID", Config{Enterprise: ent}, ErrAssertionGrantConfig},
		{"enterprise without IDToken", Config{ClientID: "agent", Enterprise: &EnterpriseAuthorization{TokenEndpoint: "https://idp.example/token"}}, ErrAssertionGrantConfig},
		{"enterprise without identity provider", Config{ClientID: "agent", Enterprise: &EnterpriseAuthorization{IDToken: idToken}}, ErrAssertionGrantConfig},
		{"workload with neither", Config{Workload: &WorkloadIdentity{}}, ErrAssertionGrantConfig},
		{"workload with both", Config{Workload: &WorkloadIdentity{AssertionFile: "f", Assertion: idToken}}, ErrAssertionGrantConfig},
		{"jwt-bearer alone", Config{GrantType: GrantJWTBearer}, ErrAssertionGrantConfig},
		{"another grant type", Config{GrantType: GrantClientCredentials, ClientID: "agent", Enterprise: ent}, ErrAssertionGrantConfig},
	} {
		if err := tc.cfg.Validate(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: Validate() = %v; want %v", tc.name, err, tc.want)
		}
	}
}

// An ID-JAG's expiry is read from its exp claim when the identity
// provider gave no expires_in; anything else is no expiry (not kept).
func TestJWTExpiry(t *testing.T) {
	exp := time.Unix(1893456000, 0)
	for jwt, want := range map[string]time.Time{
		"e30.eyJleHAiOjE4OTM0NTYwMDB9.c2ln": exp, // {"exp":1893456000}
		"e30.e30.c2ln":                      {},  // {}
		"e30.!!!.c2ln":                      {},
		"not-a-jwt":                         {},
	} {
		if got := jwtExpiry(jwt); !got.Equal(want) {
			t.Errorf("jwtExpiry(%q) = %v; want %v", jwt, got, want)
		}
	}
}
