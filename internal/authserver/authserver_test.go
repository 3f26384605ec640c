package authserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
)

// TestAuthorizationCodeFlow walks discovery, registration, authorization
// with PKCE and the code exchange by hand, as a client library would.
func TestAuthorizationCodeFlow(t *testing.T) {
	r := newRig(t, authserver.Config{})

	// Discovery starts from the resource server's 401.
	resp := r.call(t, "", "")
	wantStatus(t, "no token", resp, http.StatusUnauthorized)
	origin := strings.TrimSuffix(r.resource, "/mcp")
	prmURL := origin + "/.well-known/oauth-protected-resource/mcp"
	if got, want := resp.Header.Get("WWW-Authenticate"), `Bearer resource_metadata="`+prmURL+`"`; got != want {
		t.Fatalf("WWW-Authenticate = %q, want %q", got, want)
	}
	for _, u := range []string{prmURL, origin + "/.well-known/oauth-protected-resource"} {
		resp, body := r.get(t, u)
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			Scopes               []string `json:"scopes_supported"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &prm) != nil ||
			prm.Resource != r.resource || len(prm.AuthorizationServers) != 1 ||
			prm.AuthorizationServers[0] != r.as.URL() || len(prm.Scopes) != 3 {
			t.Fatalf("GET %s: %d %s", u, resp.StatusCode, body)
		}
	}
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		resp, body := r.get(t, r.as.URL()+p)
		var meta map[string]any
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &meta) != nil ||
			meta["issuer"] != r.as.URL() || meta["token_endpoint"] != r.as.URL()+"/token" {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, body)
		}
	}

	id, secret := r.register(t, "none")
	if secret != "" {
		t.Errorf("a public client got a secret")
	}
	verifier, challenge := pkce()
	q := r.authorize(t, id, challenge, "xyz", "mcp:read", r.resource)
	if q.Get("state") != "xyz" || q.Get("code") == "" {
		t.Fatalf("authorize redirect query: %v", q)
	}
	form := url.Values{
		"grant_type": {"authorization_code"}, "client_id": {id}, "code": {q.Get("code")},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier + "x"}, "resource": {r.resource},
	}
	if tok := r.token(t, form, nil); tok.status != http.StatusBadRequest || tok.Error != "invalid_grant" {
		t.Fatalf("wrong code_verifier: %+v", tok)
	}
	form.Set("code_verifier", verifier)
	tok := r.token(t, form, nil)
	if tok.status != http.StatusOK || tok.TokenType != "Bearer" || tok.ExpiresIn != 2 ||
		tok.Scope != "mcp:read" || tok.RefreshToken == "" || len(tok.AccessToken) < 43 {
		t.Fatalf("code exchange: %+v", tok)
	}
	wantStatus(t, "valid token", r.call(t, "", tok.AccessToken), http.StatusOK)
	if r.hits.Load() != 1 {
		t.Errorf("protected handler ran %d times, want 1", r.hits.Load())
	}

	// A replayed code is refused, and revokes what it issued.
	if again := r.token(t, form, nil); again.status != http.StatusBadRequest || again.Error != "invalid_grant" {
		t.Fatalf("replayed code: %+v", again)
	}
	if r.as.ValidToken(tok.AccessToken) {
		t.Errorf("the token of a replayed code is still valid")
	}
	st := r.as.Stats()
	if st.Registrations != 1 || st.Authorizations != 1 || st.TokensIssued != 1 || st.TokenRequests != 3 || st.Refused401 != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestAuthorizeRefusals covers the requests the authorization endpoint
// must not redirect (unknown client or redirect URI) and those it answers
// with an error redirect.
func TestAuthorizeRefusals(t *testing.T) {
	r := newRig(t, authserver.Config{})
	id, _ := r.register(t, "none")
	_, challenge := pkce()
	base := url.Values{
		"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirectURI},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"s"}, "resource": {r.resource},
	}
	cases := []struct {
		key, value string
		status     int
		errCode    string
	}{
		{"client_id", "nobody", http.StatusBadRequest, ""},
		{"redirect_uri", "http://127.0.0.1:2/elsewhere", http.StatusBadRequest, ""},
		{"code_challenge", "", http.StatusFound, "invalid_request"},
		{"code_challenge_method", "plain", http.StatusFound, "invalid_request"},
		{"resource", "http://127.0.0.1:3/other", http.StatusFound, "invalid_target"},
		{"scope", "admin", http.StatusFound, "invalid_scope"},
	}
	for _, c := range cases {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		q.Set(c.key, c.value)
		resp, _ := r.get(t, r.as.URL()+"/authorize?"+q.Encode())
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != c.status || loc.Query().Get("error") != c.errCode {
			t.Errorf("%s=%q: %d Location %q, want %d error %q", c.key, c.value, resp.StatusCode, loc, c.status, c.errCode)
		}
	}
	if n := r.as.Stats().Authorizations; n != 0 {
		t.Errorf("Authorizations = %d, want 0", n)
	}
}

// TestRefreshRotation checks that refresh tokens are single-use and that
// reuse revokes the whole family.
func TestRefreshRotation(t *testing.T) {
	r := newRig(t, authserver.Config{})
	first, id := r.login(t, "mcp:read mcp:write", r.resource)
	second := r.refresh(t, id, first.RefreshToken)
	if second.status != http.StatusOK || second.RefreshToken == "" || second.RefreshToken == first.RefreshToken ||
		second.Scope != "mcp:read mcp:write" {
		t.Fatalf("first refresh: %+v", second)
	}
	wantStatus(t, "refreshed token", r.call(t, "", second.AccessToken), http.StatusOK)

	reuse := r.refresh(t, id, first.RefreshToken)
	if reuse.status != http.StatusBadRequest || reuse.Error != "invalid_grant" {
		t.Fatalf("reused refresh token: %+v", reuse)
	}
	if n := r.as.Stats().ReuseDetected; n != 1 {
		t.Errorf("ReuseDetected = %d, want 1", n)
	}
	// The family is revoked: the token rotated in and its access token too.
	if after := r.refresh(t, id, second.RefreshToken); after.status != http.StatusBadRequest || after.Error != "invalid_grant" {
		t.Errorf("refresh token of the revoked family: %+v", after)
	}
	resp := r.call(t, "", second.AccessToken)
	wantStatus(t, "access token of the revoked family", resp, http.StatusUnauthorized)
	if !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate = %q, want invalid_token", resp.Header.Get("WWW-Authenticate"))
	}
	if st := r.as.Stats(); st.Refreshes != 1 || st.TokensIssued != 2 {
		t.Errorf("Stats = %+v", st)
	}

	// A refresh may narrow the scope, never widen it.
	narrow, id := r.login(t, "mcp:read", r.resource)
	if wide := r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {id},
		"refresh_token": {narrow.RefreshToken}, "scope": {"mcp:read mcp:write"}}, nil); wide.Error != "invalid_scope" {
		t.Errorf("widening refresh: %+v", wide)
	}
}

// TestExpiry checks that the exact lifetime is enforced and expires_in
// rounds up.
func TestExpiry(t *testing.T) {
	r := newRig(t, authserver.Config{AccessTokenLifetime: time.Second})
	issued := time.Now()
	tok, id := r.login(t, "", r.resource)
	if tok.ExpiresIn != 1 || tok.Scope != "" {
		t.Fatalf("token answer: %+v", tok)
	}
	// Only checked when the machine was quick enough for it to be fair.
	if time.Since(issued) < 500*time.Millisecond && !r.as.ValidToken(tok.AccessToken) {
		t.Errorf("token refused at once")
	}
	expired := false
	for range 30 {
		if expired = !r.as.ValidToken(tok.AccessToken); expired {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !expired {
		t.Fatalf("token still valid after 3s")
	}
	resp := r.call(t, "", tok.AccessToken)
	wantStatus(t, "expired token", resp, http.StatusUnauthorized)
	if !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate = %q, want invalid_token", resp.Header.Get("WWW-Authenticate"))
	}
	if next := r.refresh(t, id, tok.RefreshToken); next.status != http.StatusOK {
		t.Errorf("refresh after expiry: %+v", next)
	}

	r2 := newRig(t, authserver.Config{AccessTokenLifetime: 1500 * time.Millisecond, NoRefreshTokens: true})
	if tok, _ := r2.login(t, "", r2.resource); tok.ExpiresIn != 2 || tok.RefreshToken != "" {
		t.Errorf("1.5s, no refresh tokens: %+v", tok)
	}
}
