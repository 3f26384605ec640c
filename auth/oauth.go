package auth

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/client/transport"
	"golang.org/x/oauth2"

	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// Config is how a client authorizes with OAuth 2.1 as the MCP
// authorization spec has it (2025-11-25, with the 2025-03-26 fallbacks).
type Config struct {
	ClientID, ClientSecret string // pre-registered; wins over the two below
	// ClientMetadataURL is a client ID metadata document's URL: preferred
	// over dynamic registration when the authorization server supports it.
	ClientMetadataURL string
	// PrivateKey authenticates the client with private_key_jwt (RFC 7523).
	PrivateKey crypto.Signer
	// SigningAlgorithm: "" is the key's (ECDSA P-256/384/521 → ES256/384/512,
	// Ed25519 → EdDSA, RSA → RS256), checked against the server's list.
	SigningAlgorithm string
	KeyID            string // optional kid of the client assertion
	// TokenEndpointAuthMethod: "" is private_key_jwt with a key; with a
	// secret, client_secret_basic if the server lists it or lists nothing,
	// else client_secret_post; neither: none.
	TokenEndpointAuthMethod string
	RedirectURI             string // the authorization-code flow's
	// Scopes: empty is the challenge's scope, else the protected resource's
	// scopes_supported, else no scope parameter; offline_access is added
	// when the authorization server lists it.
	Scopes []string
	// TokenStore keeps the token (mcp-go's interface); nil keeps it in
	// memory. Where it writes is the user's choice.
	TokenStore transport.TokenStore
	// Authorize is the interactive step: send the user to authURL and
	// return the full URL the browser was redirected to. It is called at
	// most once at a time per client, detached from the call that needed
	// it, bounded by AuthorizeTimeout. nil: calls that need a user fail with
	// ReasonNoToken (client_credentials needs none).
	Authorize        func(ctx context.Context, authURL string) (redirectedTo string, err error)
	AuthorizeTimeout time.Duration // default 5 min
	// GrantType: "" picks authorization_code when Authorize is set and the
	// server offers it, else client_credentials with a secret or key.
	GrantType GrantType
}

// Env is what the client around an OAuth gives it.
type Env struct {
	ClientName string       // for dynamic registration
	HTTPClient *http.Client // for the authorization server; never carries the MCP token
	Logger     *slog.Logger
	NewBackOff func() backoff.BackOff // pacing of an unreachable authorization server
}

// refreshTimeout bounds one token request, detached from the callers.
const refreshTimeout = 30 * time.Second

// maxRenewals bounds how many tokens one Token call may wait for: a token
// that is expired when it arrives (a clock skewed by more than its
// lifetime) must not loop.
const maxRenewals = 3

// OAuth is one client's OAuth 2.1 token source: all its sessions and
// goroutines share one token, one refresh at a time (a rotated refresh
// token is sent exactly once), one authorization at a time, and one
// backoff when the authorization server is down.
//
// An OAuth is safe for concurrent use.
type OAuth struct {
	cfg      Config
	env      Env
	endpoint *url.URL

	life context.Context // ended by Close: detached renewals end with it
	stop context.CancelFunc
	wg   sync.WaitGroup

	refreshes, refreshFailures, authorizations atomic.Uint64

	saveMu   sync.Mutex // orders writes to the token store
	savedGen int64      // the generation last written

	mu         sync.Mutex
	loaded     bool
	challenged bool      // a server refused a request for want of a token
	challenge  Challenge // the latest, for discovery and the first scope
	disc       *discovery
	id         *identity
	tok        *oauth2.Token
	refreshAt  time.Time
	held       []string        // the scopes tok was asked with, sorted
	refused    map[string]bool // scope sets an authorization did not give
	lost       error           // the grant is lost: calls fail at once
	renewing   *renewal        // the one token request or authorization under way
	gen        int64           // tokens obtained so far
	retryAt    time.Time       // the authorization server is down: no request before
	backoff    backoff.BackOff
}

// renewal is one token request or authorization that every caller who
// needs a token waits for.
type renewal struct {
	done   chan struct{}
	err    error
	scopes []string // for an authorization: the scopes asked
	reason string   // "refresh" or "authorize" (which may be client credentials)
}

// NewOAuth returns the token source for the MCP endpoint.
func NewOAuth(endpoint *url.URL, cfg Config, env Env) *OAuth {
	if cfg.TokenStore == nil {
		cfg.TokenStore = transport.NewMemoryTokenStore()
	}
	if cfg.AuthorizeTimeout <= 0 {
		cfg.AuthorizeTimeout = 5 * time.Minute
	}
	if env.HTTPClient == nil {
		env.HTTPClient = &http.Client{}
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	if env.NewBackOff == nil {
		env.NewBackOff = func() backoff.BackOff {
			b := backoff.NewExponentialBackOff()
			b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 200*time.Millisecond, 30*time.Second, 0
			return b
		}
	}
	o := &OAuth{cfg: cfg, env: env, endpoint: endpoint, refused: map[string]bool{}}
	o.backoff = env.NewBackOff()
	o.life, o.stop = context.WithCancel(context.Background())
	return o
}

// Close ends a renewal under way and waits for it.
func (o *OAuth) Close() {
	o.stop()
	o.wg.Wait()
}

// Counts are the token refreshes, failed refreshes and authorizations so far.
func (o *OAuth) Counts() (refreshes, refreshFailures, authorizations uint64) {
	return o.refreshes.Load(), o.refreshFailures.Load(), o.authorizations.Load()
}

// Token returns the token to send: the current one (starting a refresh
// in the background when it is due, 10 % of its lifetime before expiry,
// at most 5 min), or, once a server asked for one, a new one for which it
// waits within ctx. Before any server asked, it is "": the request goes
// without, and the challenge says where to get one.
func (o *OAuth) Token(ctx context.Context) (string, error) {
	o.load(ctx)
	for renewed := 0; renewed < maxRenewals; {
		o.mu.Lock()
		now := time.Now()
		if o.validLocked(now) {
			if !now.Before(o.refreshAt) && o.renewing == nil && !now.Before(o.retryAt) && o.canRenewLocked() {
				o.startLocked(nil)
			}
			t := o.tok.AccessToken
			o.mu.Unlock()
			return t, nil
		}
		if o.lost != nil {
			err := o.lost
			o.mu.Unlock()
			return "", err
		}
		if o.tok == nil && !o.challenged {
			o.mu.Unlock()
			return "", nil
		}
		r, err := o.joinLocked(ctx, now, nil)
		o.mu.Unlock()
		if err != nil {
			return "", err
		}
		if r == nil {
			continue // the backoff's pause is over
		}
		switch err := o.await(ctx, r); {
		case errors.Is(err, errTryAgain):
		case err != nil:
			return "", err
		default:
			renewed++
		}
	}
	return "", &Error{Reason: ReasonTokenRejected, Err: errors.New("every token obtained was already expired")}
}

// joinLocked returns the renewal under way, or starts one, or, while the
// authorization server is backed off, waits out the pause (with o.mu
// released) and returns nil. A pause that would outlast ctx's deadline
// ends the wait at once.
func (o *OAuth) joinLocked(ctx context.Context, now time.Time, scopes []string) (*renewal, error) {
	if r := o.renewing; r != nil {
		return r, nil
	}
	pause := o.retryAt.Sub(now)
	if pause <= 0 {
		return o.startLocked(scopes), nil
	}
	if deadline, ok := ctx.Deadline(); ok && deadline.Before(now.Add(pause)) {
		return nil, fmt.Errorf("%w: next attempt in %v, after the deadline: %w", ErrUnavailable, pause.Round(time.Millisecond), context.DeadlineExceeded)
	}
	o.mu.Unlock()
	ended := wait.Sleep(ctx, pause, o.life.Done())
	o.mu.Lock()
	switch ended {
	case wait.Cancelled:
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	case wait.Stopped:
		return nil, fmt.Errorf("%w: the client closed", ErrUnavailable)
	}
	return nil, nil
}

// Rejected reports that the server answered 401 to token ("" when none
// was sent) with ch, and returns the token to send instead: the current
// one if another caller already replaced token, else a new one for which
// all callers rejected with token wait together.
func (o *OAuth) Rejected(ctx context.Context, token string, ch Challenge) (string, error) {
	o.load(ctx)
	o.mu.Lock()
	o.challenged = true
	if ch.ResourceMetadata != "" || len(ch.Scopes) > 0 {
		o.challenge = ch
	}
	if o.tok != nil && o.tok.AccessToken == token && token != "" {
		// Thought valid, refused: it is not. Keep its refresh token.
		o.tok.Expiry, o.refreshAt = time.Now().Add(-time.Second), time.Time{}
	}
	o.mu.Unlock()
	t, err := o.Token(ctx)
	if err == nil && t == token {
		return "", &Error{Reason: ReasonTokenRejected}
	}
	return t, err
}

// InsufficientScope reports a 403 insufficient_scope to token and returns
// a token with the union of the scopes held and those ch asks for. It never
// authorizes again for a scope set already held or already refused.
func (o *OAuth) InsufficientScope(ctx context.Context, token string, ch Challenge) (string, error) {
	o.load(ctx)
	for range maxRenewals {
		o.mu.Lock()
		want := union(o.held, ch.Scopes)
		switch {
		case o.tok != nil && o.tok.AccessToken != token && o.validLocked(time.Now()) && subset(want, o.held):
			t := o.tok.AccessToken
			o.mu.Unlock()
			return t, nil
		case subset(want, o.held) || o.refused[key(want)]:
			o.mu.Unlock()
			return "", &InsufficientScopeError{Scopes: ch.Scopes}
		case o.lost != nil:
			err := o.lost
			o.mu.Unlock()
			return "", err
		}
		r, err := o.joinLocked(ctx, time.Now(), want)
		o.mu.Unlock()
		if err != nil {
			return "", err
		}
		if r == nil {
			continue
		}
		if err := o.await(ctx, r); err != nil && !errors.Is(err, errTryAgain) {
			if errors.Is(err, ErrUnavailable) {
				return "", err
			}
			return "", &InsufficientScopeError{Scopes: ch.Scopes, Err: err}
		}
	}
	return "", &InsufficientScopeError{Scopes: ch.Scopes}
}

// Authorize runs an authorization now, or joins one under way, whatever
// the state: it is how a lost grant is recovered.
func (o *OAuth) Authorize(ctx context.Context) error {
	o.load(ctx)
	o.mu.Lock()
	o.challenged = true
	for o.renewing != nil && o.renewing.reason == "refresh" {
		r := o.renewing
		o.mu.Unlock()
		if err := o.await(ctx, r); errors.Is(err, ErrUnavailable) && ctx.Err() != nil {
			return err
		}
		o.mu.Lock()
	}
	r := o.renewing
	if r == nil {
		o.lost = nil
		r = o.startLocked(append([]string{}, o.held...))
	}
	o.mu.Unlock()
	err := o.await(ctx, r)
	if errors.Is(err, errTryAgain) {
		return r.err
	}
	return err
}

// errTryAgain: the renewal waited for found the authorization server
// unavailable; the waiter backs off and tries again within its context.
var errTryAgain = errors.New("try again")

// await waits for r within ctx.
func (o *OAuth) await(ctx context.Context, r *renewal) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.reason == "authorize" {
			return &Error{Reason: ReasonPending, Err: ctx.Err()}
		}
		return fmt.Errorf("%w: waiting for a token: %w", ErrUnavailable, ctx.Err())
	}
	if r.err != nil && isUnavailable(r.err) {
		return errTryAgain
	}
	return r.err
}

func (o *OAuth) validLocked(now time.Time) bool {
	return o.tok != nil && o.tok.AccessToken != "" && (o.tok.Expiry.IsZero() || now.Before(o.tok.Expiry))
}

// canRenewLocked: a refresh ahead of expiry needs a refresh token or the
// client_credentials grant, never a user.
func (o *OAuth) canRenewLocked() bool {
	return o.tok.RefreshToken != "" || o.cfg.GrantType == GrantClientCredentials ||
		(o.cfg.Authorize == nil && o.cfg.ClientID != "" && (o.cfg.ClientSecret != "" || o.cfg.PrivateKey != nil))
}
