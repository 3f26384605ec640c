package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
)

func TestSetDown(t *testing.T) {
	r := newRig(t, authserver.Config{})
	tok, id := r.login(t, "", r.resource)
	r.as.SetDown(true)
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/authorize?client_id=x"} {
		resp, _ := r.get(t, r.as.URL()+p)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "" {
			t.Errorf("GET %s while down: %d Retry-After %q", p, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	req, _ := http.NewRequest(http.MethodPost, r.as.URL()+"/register", strings.NewReader("{}"))
	if resp, _ := r.do(t, req); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("register while down: %d", resp.StatusCode)
	}
	before := r.as.Stats()
	if got := r.refresh(t, id, tok.RefreshToken); got.status != http.StatusServiceUnavailable {
		t.Errorf("refresh while down: %+v", got)
	}
	st := r.as.Stats()
	if st.TokenRequests != before.TokenRequests+1 || st.TokenRequestsWhileDown != before.TokenRequestsWhileDown+1 {
		t.Errorf("Stats after a token request while down: %+v (before %+v)", st, before)
	}
	// The resource server validates locally: the outage does not reach it.
	wantStatus(t, "token while down", r.call(t, "", tok.AccessToken), http.StatusOK)

	r.as.SetDown(false)
	if got := r.refresh(t, id, tok.RefreshToken); got.status != http.StatusOK {
		t.Errorf("refresh after the outage: %+v", got)
	}
	if n := r.as.Stats().TokenRequestsWhileDown; n != 1 {
		t.Errorf("TokenRequestsWhileDown = %d, want 1", n)
	}
}

func TestInvalidateAccessTokens(t *testing.T) {
	r := newRig(t, authserver.Config{})
	tok, id := r.login(t, "", r.resource)
	r.as.InvalidateAccessTokens()
	resp := r.call(t, "", tok.AccessToken)
	wantStatus(t, "invalidated token", resp, http.StatusUnauthorized)
	if !strings.HasSuffix(resp.Header.Get("WWW-Authenticate"), `, error="invalid_token"`) {
		t.Errorf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
	}
	next := r.refresh(t, id, tok.RefreshToken)
	if next.status != http.StatusOK {
		t.Fatalf("refresh after invalidation: %+v", next)
	}
	wantStatus(t, "token issued after invalidation", r.call(t, "", next.AccessToken), http.StatusOK)
}

func TestRevoke(t *testing.T) {
	r := newRig(t, authserver.Config{})
	tok, id := r.login(t, "", r.resource)
	r.as.Revoke()
	wantStatus(t, "revoked token", r.call(t, "", tok.AccessToken), http.StatusUnauthorized)
	if got := r.refresh(t, id, tok.RefreshToken); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
		t.Errorf("refresh after Revoke: %+v", got)
	}
	// A new authorization is unaffected.
	fresh, freshID := r.login(t, "", r.resource)
	wantStatus(t, "token of a later grant", r.call(t, "", fresh.AccessToken), http.StatusOK)

	// RFC 7009 revocation of one grant, by its refresh token.
	req, _ := http.NewRequest(http.MethodPost, r.as.URL()+"/revoke",
		strings.NewReader(url.Values{"token": {fresh.RefreshToken}, "client_id": {freshID}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, body := r.do(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	if r.as.ValidToken(fresh.AccessToken) {
		t.Errorf("access token still valid after its refresh token was revoked")
	}
}

func TestRequireScopes(t *testing.T) {
	r := newRig(t, authserver.Config{})
	read, _ := r.login(t, "mcp:read", r.resource)
	r.as.RequireScopes("mcp:write")
	resp := r.call(t, "", read.AccessToken)
	wantStatus(t, "token without mcp:write", resp, http.StatusForbidden)
	want := `Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="` +
		strings.TrimSuffix(r.resource, "/mcp") + `/.well-known/oauth-protected-resource/mcp"`
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Errorf("WWW-Authenticate = %q, want %q", got, want)
	}
	write, _ := r.login(t, "mcp:read mcp:write", r.resource)
	wantStatus(t, "token with mcp:write", r.call(t, "", write.AccessToken), http.StatusOK)
	r.as.RequireScopes()
	wantStatus(t, "no requirement", r.call(t, "", read.AccessToken), http.StatusOK)
	if st := r.as.Stats(); st.Refused403 != 1 || st.Refused401 != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestSetDeny(t *testing.T) {
	r := newRig(t, authserver.Config{})
	id, _ := r.register(t, "none")
	_, challenge := pkce()
	r.as.SetDeny(true)
	q := r.authorize(t, id, challenge, "st8", "", r.resource)
	if q.Get("error") != "access_denied" || q.Get("state") != "st8" || q.Has("code") {
		t.Errorf("denied authorization redirect query: %v", q)
	}
	r.as.SetDeny(false)
	if q := r.authorize(t, id, challenge, "st9", "", r.resource); q.Get("code") == "" {
		t.Errorf("authorization after SetDeny(false): %v", q)
	}
	if n := r.as.Stats().Authorizations; n != 1 {
		t.Errorf("Authorizations = %d, want 1", n)
	}
}

func TestClientCredentials(t *testing.T) {
	const id, secret = "svc", "s3cr:t/+ &" // characters RFC 6749 §2.3.1 encodes
	r := newRig(t, authserver.Config{ClientID: id, ClientSecret: secret})
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"mcp:write"}, "resource": {r.resource}}
	basic := r.token(t, form, []string{id, secret})
	if basic.status != http.StatusOK || basic.RefreshToken != "" || basic.Scope != "mcp:write" {
		t.Fatalf("client_secret_basic: %+v", basic)
	}
	wantStatus(t, "client credentials token", r.call(t, "", basic.AccessToken), http.StatusOK)

	post := url.Values{"client_id": {id}, "client_secret": {secret}}
	for k, v := range form {
		post[k] = v
	}
	if got := r.token(t, post, nil); got.status != http.StatusOK {
		t.Errorf("client_secret_post: %+v", got)
	}
	if got := r.token(t, form, []string{id, "wrong"}); got.status != http.StatusUnauthorized || got.Error != "invalid_client" {
		t.Errorf("wrong secret: %+v", got)
	}

	// A registered client must use the method it registered.
	cid, csecret := r.register(t, "client_secret_post", "client_credentials")
	if got := r.token(t, form, []string{cid, csecret}); got.status != http.StatusUnauthorized {
		t.Errorf("client_secret_post client using Basic: %+v", got)
	}
	form.Set("client_id", cid)
	form.Set("client_secret", csecret)
	if got := r.token(t, form, nil); got.status != http.StatusOK {
		t.Errorf("registered confidential client: %+v", got)
	}
	// A public client has no credentials to offer.
	pid, _ := r.register(t, "none")
	pub := url.Values{"grant_type": {"client_credentials"}, "client_id": {pid}}
	if got := r.token(t, pub, nil); got.status != http.StatusBadRequest || got.Error != "unauthorized_client" {
		t.Errorf("public client: %+v", got)
	}
	if n := r.as.Stats().ClientCredentials; n != 3 {
		t.Errorf("ClientCredentials = %d, want 3", n)
	}
}
