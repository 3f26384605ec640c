package resilientmcp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// oauthRig is a test server guarded by a loopback authorization server,
// and a client that authorizes with WithOAuth through a headless browser.
type oauthRig struct {
	*rig
	as      *authserver.Server
	browser *browser
	store   *recordingStore
}

func newOAuthRig(t *testing.T, asCfg authserver.Config, cfg testserver.Config, oc client.OAuthConfig, opts ...client.Option) *oauthRig {
	t.Helper()
	as, srv := guardedServer(t, asCfg, cfg)
	o := &oauthRig{as: as, browser: &browser{}, store: &recordingStore{}}
	if oc.RedirectURI == "" && oc.GrantType != client.GrantClientCredentials {
		oc.RedirectURI = "http://127.0.0.1:8976/callback"
		oc.Authorize = o.browser.authorize
	}
	oc.TokenStore = o.store
	c, err := client.New(srv.URL(), append([]client.Option{client.WithOAuth(oc)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	o.rig = &rig{t: t, srv: srv, c: c}
	return o
}

// guardedServer is a test server whose every request is checked by a
// loopback authorization server's Protect.
func guardedServer(t testing.TB, asCfg authserver.Config, cfg testserver.Config) (*authserver.Server, *testserver.Server) {
	t.Helper()
	as, err := authserver.Start(asCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	// The guard needs the server's URL, known once it listens.
	cfg.Guard = func(next http.Handler) http.Handler { return as.Protect(srv.URL(), next) }
	srv.Reconfigure(cfg)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	return as, srv
}

// browser is a user who approves at once: it opens the authorization URL
// and reports where it was redirected, without following the redirect.
type browser struct {
	opened atomic.Int32
	mu     sync.Mutex
	codes  []string // every code and state it saw, for the secrecy check
}

func (b *browser) authorize(ctx context.Context, authURL string) (string, error) {
	b.opened.Add(1)
	loc, err := authserver.Approve(ctx, authURL)
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	for _, k := range []string{"code=", "code_verifier="} {
		if i := strings.Index(loc, k); i >= 0 {
			b.codes = append(b.codes, strings.SplitN(loc[i+len(k):], "&", 2)[0])
		}
	}
	if i := strings.Index(authURL, "code_challenge="); i >= 0 {
		b.codes = append(b.codes, strings.SplitN(authURL[i+len("code_challenge="):], "&", 2)[0])
	}
	b.mu.Unlock()
	return loc, nil
}

// seen is every code and challenge the browser saw so far.
func (b *browser) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.codes)
}

// recordingStore is a token store that remembers every token it was given.
type recordingStore struct {
	transport.MemoryTokenStore
	mu    sync.Mutex
	saved []string
}

func (s *recordingStore) SaveToken(ctx context.Context, t *transport.Token) error {
	s.mu.Lock()
	s.saved = append(s.saved, t.AccessToken, t.RefreshToken)
	s.mu.Unlock()
	return s.MemoryTokenStore.SaveToken(ctx, t)
}

func (s *recordingStore) secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.saved {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// callers runs n goroutines calling echo until stop is closed, and counts
// calls and failures.
type callers struct {
	calls, failed atomic.Int64
	mu            sync.Mutex
	errs          []string
	stop          chan struct{}
	wg            sync.WaitGroup
}

func startCallers(r *rig, n int) *callers {
	cs := &callers{stop: make(chan struct{})}
	for g := range n {
		cs.wg.Go(func() {
			for i := 0; i < 100000; i++ {
				select {
				case <-cs.stop:
					return
				default:
				}
				text := fmt.Sprintf("g%d-%d", g, i)
				got, err := callTool(r.ctx(), r.c, "echo", map[string]any{"text": text})
				cs.calls.Add(1)
				if err != nil || got != text {
					cs.failed.Add(1)
					cs.mu.Lock()
					if len(cs.errs) < 5 {
						cs.errs = append(cs.errs, fmt.Sprintf("%q, %v", got, err))
					}
					cs.mu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	return cs
}

func (cs *callers) halt() {
	close(cs.stop)
	cs.wg.Wait()
}

// The lifecycle: 64 goroutines and a pool of 4 sessions through
// several 1 s token lifetimes, one "all tokens invalid now", one outage of
// the authorization server longer than the refresh margin, an idle period
// longer than the token's lifetime, then a revocation.
func TestOAuthLifecycle(t *testing.T) {
	const lifetime = time.Second
	var logs logRecorder
	o := newOAuthRig(t, authserver.Config{AccessTokenLifetime: lifetime}, testserver.Config{Era: testserver.SessionEra}, client.OAuthConfig{},
		client.WithPoolSize(4), client.WithLogger(logs.logger()))
	began := time.Now()
	cs := startCallers(o.rig, 64)
	time.Sleep(2500 * time.Millisecond) // two expiries
	o.as.InvalidateAccessTokens()
	time.Sleep(700 * time.Millisecond)
	// An outage longer than a token's lifetime: a refresh falls due in it
	// and the token expires while the server is down.
	o.as.SetDown(true)
	time.Sleep(1200 * time.Millisecond)
	o.as.SetDown(false)
	time.Sleep(1500 * time.Millisecond)
	cs.halt()
	active := time.Since(began)
	time.Sleep(lifetime + 500*time.Millisecond) // idle past the expiry
	o.mustEcho("after the idle period")
	o.mustEcho("and again")

	st, cst := o.as.Stats(), o.c.Stats()
	t.Logf("%d calls in %v; server: %+v; client: refreshes %d, failed %d, authorizations %d",
		cs.calls.Load(), active.Round(time.Millisecond), st, cst.TokenRefreshes, cst.TokenRefreshFailures, cst.Authorizations)
	if n := cs.failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed before the revocation, e.g. %v", n, cs.calls.Load(), cs.errs)
	}
	if st.ReuseDetected != 0 {
		t.Errorf("%d refresh tokens were sent twice", st.ReuseDetected)
	}
	if st.Refreshes != int64(cst.TokenRefreshes) || st.Authorizations != 1 || cst.Authorizations != 1 || o.browser.opened.Load() != 1 {
		t.Errorf("server saw %d refreshes and %d authorizations, the client counts %d and %d, the user was asked %d times; want the same refreshes and one authorization",
			st.Refreshes, st.Authorizations, cst.TokenRefreshes, cst.Authorizations, o.browser.opened.Load())
	}
	// One refresh per expiry: a token lives ~0.9 s before it is refreshed,
	// plus the refresh forced by "all tokens invalid now" and the one
	// after the idle period.
	if most := int64(active/(lifetime*8/10)) + 2; st.Refreshes > most || st.Refreshes < 4 {
		t.Errorf("%d refreshes in %v of calls; want one per expiry (4..%d)", st.Refreshes, active.Round(time.Millisecond), most)
	}
	if st.TokenRequestsWhileDown > 8 {
		t.Errorf("%d token requests during a 1.2 s outage; want them paced by one backoff", st.TokenRequestsWhileDown)
	}

	// Revocation: the next call is refused at once, and did not run.
	o.as.Revoke()
	runs := o.srv.ToolRuns("increment")
	err := o.increment()
	var ae *client.AuthorizationRequiredError
	if !errors.Is(err, client.ErrAuthorizationRequired) || !errors.As(err, &ae) || ae.Reason != "invalid_grant" {
		t.Errorf("first call after the revocation = %v; want ErrAuthorizationRequired (invalid_grant)", err)
	}
	if n := o.srv.ToolRuns("increment") - runs; n != 0 {
		t.Errorf("increment ran %d times after the revocation", n)
	}

	// Secrets never in logs, errors or Stats.
	secrets := append(o.store.secrets(), o.browser.seen()...)
	seen := logs.String() + fmt.Sprint(err) + fmt.Sprintf("%+v", o.c.Stats()) + strings.Join(cs.errs, "")
	for _, s := range secrets {
		if strings.Contains(seen, s) {
			t.Errorf("a token or code (%d bytes) appears in the logs, errors or stats", len(s))
		}
	}
	if len(secrets) < 4 {
		t.Errorf("only %d secrets recorded; the check proves nothing", len(secrets))
	}
}
