package authserver_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const redirectURI = "http://127.0.0.1:1/callback" // never dialled: redirects are not followed

// rig is an authorization server and a resource server it protects, whose
// handler counts the requests that got through.
type rig struct {
	as       *authserver.Server
	resource string // the protected endpoint, "http://127.0.0.1:PORT/mcp"
	hits     atomic.Int64
	hc       *http.Client // follows no redirect
}

func newRig(t *testing.T, cfg authserver.Config) *rig {
	t.Helper()
	as, err := authserver.Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(as.Close)
	r := &rig{as: as}
	// Unstarted, so that its address, and so the resource, is known before
	// the handler that must name it.
	rs := httptest.NewUnstartedServer(nil)
	r.resource = "http://" + rs.Listener.Addr().String() + "/mcp"
	rs.Config.Handler = as.Protect(r.resource, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.hits.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	rs.Start()
	t.Cleanup(rs.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	r.hc = &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// do sends req and returns the response with its body read.
func (r *rig) do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := r.hc.Do(req.WithContext(ctx(t)))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", req.Method, req.URL.Path, err)
	}
	return resp, body
}

func (r *rig) get(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return r.do(t, req)
}

// call sends an authenticated GET to url ("" for the rig's resource).
func (r *rig) call(t *testing.T, u, token string) *http.Response {
	t.Helper()
	if u == "" {
		u = r.resource
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, _ := r.do(t, req)
	return resp
}

// register registers a client with the token endpoint auth method, and
// returns its id and secret.
func (r *rig) register(t *testing.T, method string, grants ...string) (id, secret string) {
	t.Helper()
	meta := map[string]any{"client_name": "test", "redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": method}
	if grants != nil {
		meta["grant_types"] = grants
	}
	b, _ := json.Marshal(meta)
	req, _ := http.NewRequest(http.MethodPost, r.as.URL()+"/register", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, body := r.do(t, req)
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &out) != nil || out.ClientID == "" {
		t.Fatalf("register %s: %d %s", method, resp.StatusCode, body)
	}
	return out.ClientID, out.ClientSecret
}

// authorize sends an authorization request and returns the 302's Location.
func (r *rig) authorize(t *testing.T, clientID, challenge, state, scope, resource string) url.Values {
	t.Helper()
	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"},
		"state": {state}, "resource": {resource},
	}
	if scope != "" {
		q.Set("scope", scope)
	}
	resp, body := r.get(t, r.as.URL()+"/authorize?"+q.Encode())
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), redirectURI+"?") {
		t.Fatalf("authorize: %d Location %q %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	return loc.Query()
}

// tokenReply is a token endpoint answer, success or error.
type tokenReply struct {
	status       int
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
}

// token posts form to the token endpoint, with Basic authentication if
// basic is non-nil (id and secret are form-encoded first, RFC 6749 §2.3.1).
func (r *rig) token(t *testing.T, form url.Values, basic []string) tokenReply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.as.URL()+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic != nil {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	resp, body := r.do(t, req)
	var out tokenReply
	if err := json.Unmarshal(body, &out); err != nil && resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	if resp.StatusCode != http.StatusServiceUnavailable &&
		(resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != "application/json") {
		t.Errorf("token answer headers: %v", resp.Header)
	}
	out.status = resp.StatusCode
	return out
}

// login runs the whole authorization code flow for a new public client
// and returns the token answer and the client's id.
func (r *rig) login(t *testing.T, scope, resource string) (tokenReply, string) {
	t.Helper()
	id, _ := r.register(t, "none")
	verifier, challenge := pkce()
	q := r.authorize(t, id, challenge, "st", scope, resource)
	tok := r.token(t, url.Values{
		"grant_type": {"authorization_code"}, "client_id": {id}, "code": {q.Get("code")},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}, "resource": {resource},
	}, nil)
	if tok.status != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("login: %+v", tok)
	}
	return tok, id
}

// refresh uses a public client's refresh token.
func (r *rig) refresh(t *testing.T, clientID, refreshToken string) tokenReply {
	t.Helper()
	return r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {refreshToken}}, nil)
}

func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func wantStatus(t *testing.T, what string, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d (WWW-Authenticate %q)", what, resp.StatusCode, want, resp.Header.Get("WWW-Authenticate"))
	}
}
