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
	"golang.org/x/sync/singleflight"

	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// Config is how a client authorizes with OAuth 2.1 as the MCP
// authorization spec has it (2025-11-25, with the 2025-03-26 fallbacks).
type Config struct {
	// ClientID, ClientSecret: a pre-registered client. ClientID wins over
	// ClientMetadataURL and dynamic registration; with PrivateKey set the
	// client authenticates with the key, not the secret.
	ClientID, ClientSecret string
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
	// for the authorization-code grant when the authorization server lists
	// it.
	Scopes []string
	// Store is where the grant lives: the client registration and the
	// tokens, keyed by issuer, resource and client. nil is
	// NewMemoryStore(): one process, forgotten at exit. NewFileStore(dir)
	// survives a restart and is shared by every process of the machine;
	// redisstore.New is shared by every replica. Every renewal runs under
	// its lock.
	Store Store
	// TokenStore is mcp-go's interface, tokens only, one process: kept for
	// users who have one (the registration stays in memory). Not with
	// Store.
	TokenStore transport.TokenStore
	// Authorize is the interactive step: send the user to authURL and
	// return the full URL the browser was redirected to. It is called at
	// most once at a time per client (and per Store key, across the
	// processes that share the Store), detached from the call that needed
	// it, bounded by AuthorizeTimeout. nil: calls that need a user fail
	// with ReasonNoToken (client_credentials needs none).
	Authorize        func(ctx context.Context, authURL string) (redirectedTo string, err error)
	AuthorizeTimeout time.Duration // default 5 min
	// GrantType: "" picks authorization_code when Authorize is set and the
	// server offers it, else client_credentials with a secret or key;
	// GrantJWTBearer with Enterprise or Workload.
	GrantType GrantType
	// Enterprise is enterprise-managed authorization: the user's ID token
	// exchanged at the enterprise's identity provider for an ID-JAG, then
	// the JWT bearer grant. nil: not used. Not with Workload.
	Enterprise *EnterpriseAuthorization
	// Workload is workload identity federation: the platform's JWT for
	// the workload presented with the JWT bearer grant. nil: not used.
	Workload *WorkloadIdentity

	// DPoP is when tokens are bound to a key (RFC 9449): "" (DPoPAuto)
	// when the authorization server advertises it, DPoPAlways, or
	// DPoPNever. With DPoP every token request, of every grant, and
	// every request to the MCP server carries a fresh proof, and a
	// DPoP-bound token goes as "Authorization: DPoP". A server's
	// use_dpop_nonce answer is met by sending the request again at once
	// with its nonce (the request did not run).
	DPoP DPoPMode
	// DPoPKey is the key to bind tokens to: ECDSA P-256/384/521 (ES256/
	// 384/512), Ed25519 (EdDSA) or RSA (RS256), such as an HSM's. nil: a
	// P-256 key per grant, generated when DPoP is first used and kept
	// with the grant in the Store (a private key, as sensitive as the
	// refresh token; with TokenStore, which holds tokens only, it stays in
	// this process). Setting it uses DPoP unless DPoP is DPoPNever.
	DPoPKey crypto.Signer
}

// ErrStoreAndTokenStore is Config with both Store and TokenStore set.
var ErrStoreAndTokenStore = errors.New("auth: Store and TokenStore are both set: the grant lives in one place")

// Validate reports a Config that cannot work whatever the server says.
func (c *Config) Validate() error {
	if c.Store != nil && c.TokenStore != nil {
		return ErrStoreAndTokenStore
	}
	if err := c.validateAssertionGrants(); err != nil {
		return err
	}
	return c.validateDPoP()
}

// Env is what the client around an OAuth gives it.
type Env struct {
	ClientName string       // for dynamic registration
	HTTPClient *http.Client // for the authorization server; never carries the MCP token
	Logger     *slog.Logger
	NewBackOff func() backoff.BackOff // pacing of an unreachable authorization server or Store
	// OnRenewal, if set, is told of every renewal this process sent to the
	// authorization server, a refresh or an authorization, once it ended:
	// err is nil when a token came. It runs on the renewal's goroutine,
	// under no lock of the OAuth's, and must return quickly.
	OnRenewal func(refresh bool, err error)
}

// refreshTimeout bounds one token request, detached from the callers.
const refreshTimeout = 30 * time.Second

// maxRenewals bounds how many tokens one Token call may wait for: a token
// that is expired when it arrives (a clock skewed by more than its
// lifetime) must not loop.
const maxRenewals = 3

// OAuth is one client's OAuth 2.1 token source: all its sessions and
// goroutines share one token, one renewal at a time, and one backoff when
// the authorization server (or the Store) is down. A renewal runs under the Store's lock
// for its key, so that processes sharing the Store renew once between
// them too: in this process, the renewal under way is the fast path
// (callers wait for it) in front of that lock.
//
// An OAuth is safe for concurrent use.
type OAuth struct {
	cfg      Config
	env      Env
	endpoint *url.URL

	life context.Context // ended by Close: detached renewals end with it
	stop context.CancelFunc
	wg   sync.WaitGroup // the renewal under way

	refreshes, refreshFailures, authorizations atomic.Uint64

	// Lock order: the Store's lock for a key (held by a renewal while it
	// talks to the authorization server), then mu. mu is never held while
	// waiting for the Store, calling it, or talking to any server; it
	// guards the fields below, which are this process's view.
	mu         sync.Mutex
	challenged bool      // a server refused a request for want of a token
	challenge  Challenge // the latest, for discovery and the first scope
	disc       *discovery
	id         *identity // the last identity used, in case the Store forgets it
	key        Key       // the Store key (issuer, resource, client) id, tok and ver belong to
	tok        *Token
	tokAsked   time.Time // when the renewal that asked the authorization server for tok started; zero for a token taken from the Store
	ver        int64     // the Store's version tok came from or went to
	unsaved    bool      // tok could not be written: it is newer than the stored one (version ver)
	refreshAt  time.Time
	held       []string        // the scopes tok was asked with, sorted
	refused    map[string]bool // scope sets an authorization did not give
	lost       error           // the grant is lost: calls fail at once
	retryAt    time.Time       // the authorization server or the Store is down: no renewal before
	backoff    backoff.BackOff
	// renewing describes the renewal under way, nil if none. It is set
	// when the renewal starts and cleared, with flights.Forget, when it
	// ends, both under mu: while it is set, flights holds that renewal
	// under renewalKey and DoChan joins it. flights' own lock is taken
	// under mu (DoChan, Forget), never the other way round.
	renewing *renewal
	flights  singleflight.Group

	jags idJAGs        // Enterprise's identity provider endpoint and last ID-JAG; its own lock, a leaf
	read assertionFile // the Workload's assertion file as last read; its own lock, a leaf
	dpop dpopState     // DPoP keys and nonces; its own lock, a leaf
}

// renewalKey is the one flight: one token request or authorization at a
// time in this process, whatever its kind.
const renewalKey = "renewal"

// renewal is one token request or authorization that every caller who
// needs a token waits for.
type renewal struct {
	reason  string    // "refresh" or "authorize" (which may be client credentials)
	scopes  []string  // for an authorization: the scopes asked
	from    string    // the access token it replaces, "" if none
	started time.Time // before anything was asked of the authorization server
}

// NewOAuth returns the token source for the MCP endpoint. cfg must pass
// Validate; a Config with both stores uses Store.
func NewOAuth(endpoint *url.URL, cfg Config, env Env) *OAuth {
	switch {
	case cfg.Store != nil:
	case cfg.TokenStore != nil:
		cfg.Store = newTokenStore(cfg.TokenStore)
	default:
		cfg.Store = NewMemoryStore()
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
// without, and the challenge says where to get one (and which Store key
// holds a grant from an earlier process).
func (o *OAuth) Token(ctx context.Context) (string, error) {
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
		if o.lost != nil && !o.assertionRotated() {
			err := o.lost
			o.mu.Unlock()
			return "", err
		}
		if o.tok == nil && !o.challenged {
			o.mu.Unlock()
			return "", nil
		}
		ch, r, err := o.joinLocked(ctx, now, nil)
		o.mu.Unlock()
		if err != nil {
			return "", err
		}
		if ch == nil {
			continue // the backoff's pause is over
		}
		switch err := o.await(ctx, ch, r); {
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
func (o *OAuth) joinLocked(ctx context.Context, now time.Time, scopes []string) (<-chan singleflight.Result, *renewal, error) {
	if r := o.renewing; r != nil {
		return o.flights.DoChan(renewalKey, joinedTooLate), r, nil
	}
	pause := o.retryAt.Sub(now)
	if pause <= 0 {
		ch, r := o.startLocked(scopes)
		return ch, r, nil
	}
	if deadline, ok := ctx.Deadline(); ok && deadline.Before(now.Add(pause)) {
		return nil, nil, fmt.Errorf("%w: next attempt in %v, after the deadline: %w", ErrUnavailable, pause.Round(time.Millisecond), context.DeadlineExceeded)
	}
	o.mu.Unlock()
	ended := wait.Sleep(ctx, pause, o.life.Done())
	o.mu.Lock()
	switch ended {
	case wait.Cancelled:
		return nil, nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	case wait.Stopped:
		return nil, nil, fmt.Errorf("%w: the client closed", ErrUnavailable)
	}
	return nil, nil, nil
}

// joinedTooLate is what DoChan would run for a caller who joins a renewal
// that had already ended: never, since a renewal leaves the group (Forget)
// when it clears o.renewing, under o.mu. Should it run, the caller looks
// again.
func joinedTooLate() (any, error) { return nil, errTryAgain }

// Rejected reports that the server answered 401 to token ("" when none
// was sent) with ch, and returns the token to send instead: the current
// one if another caller already replaced token, else a new one for which
// all callers rejected with token wait together.
func (o *OAuth) Rejected(ctx context.Context, token string, ch Challenge) (string, error) {
	o.mu.Lock()
	o.challenged = true
	if ch.ResourceMetadata != "" || len(ch.Scopes) > 0 {
		o.challenge = ch
	}
	if o.tok != nil && o.tok.AccessToken == token && token != "" {
		// Thought valid, refused: it is not. Keep its refresh token, and
		// look again where the resource sends its clients: it may have
		// moved to another authorization server (SEP-2352), whose
		// registration and tokens are another grant.
		o.tok.Expiry, o.refreshAt = time.Now().Add(-time.Second), time.Time{}
		o.disc = nil
	}
	o.mu.Unlock()
	t, err := o.Token(ctx)
	if err == nil && t == token {
		return "", &Error{Reason: ReasonTokenRejected}
	}
	return t, err
}

// askedSince reports whether token is the current one and was asked of
// the authorization server after t: a refusal of it is the server's word on
// new tokens, not on old ones. A token taken from the Store (another
// process's, perhaps obtained just before the server dropped every token
// it had issued) was not.
func (o *OAuth) askedSince(token string, t time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tok != nil && o.tok.AccessToken == token && o.tokAsked.After(t)
}

// InsufficientScope reports a 403 insufficient_scope to token and returns
// a token with the union of the scopes held and those ch asks for. It never
// authorizes again for a scope set already held or already refused.
func (o *OAuth) InsufficientScope(ctx context.Context, token string, ch Challenge) (string, error) {
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
		c, r, err := o.joinLocked(ctx, time.Now(), want)
		o.mu.Unlock()
		if err != nil {
			return "", err
		}
		if c == nil {
			continue
		}
		if err := o.await(ctx, c, r); err != nil && !errors.Is(err, errTryAgain) {
			if errors.Is(err, ErrUnavailable) {
				return "", err
			}
			return "", &InsufficientScopeError{Scopes: ch.Scopes, Err: err}
		}
	}
	return "", &InsufficientScopeError{Scopes: ch.Scopes}
}

// Authorize runs an authorization now, or joins one under way, whatever
// the state: it is how a lost grant is recovered. Another process sharing
// the Store that authorized since this one's token was obtained is as
// good: its token is used and the user is not asked.
func (o *OAuth) Authorize(ctx context.Context) error {
	o.mu.Lock()
	o.challenged = true
	for o.renewing != nil && o.renewing.reason == "refresh" {
		r := o.renewing
		c := o.flights.DoChan(renewalKey, joinedTooLate)
		o.mu.Unlock()
		if err := o.await(ctx, c, r); errors.Is(err, ErrUnavailable) && ctx.Err() != nil {
			return err
		}
		o.mu.Lock()
	}
	var c <-chan singleflight.Result
	r := o.renewing
	if r != nil {
		c = o.flights.DoChan(renewalKey, joinedTooLate)
	} else {
		o.lost = nil
		c, r = o.startLocked(append([]string{}, o.held...))
	}
	o.mu.Unlock()
	err := o.await(ctx, c, r)
	var again *tryAgainError
	if errors.As(err, &again) {
		return again.err
	}
	return err
}

// errTryAgain: the renewal waited for found the authorization server (or
// the Store) unavailable; the waiter backs off and tries again within its
// context.
var errTryAgain = errors.New("try again")

// tryAgainError is errTryAgain with the renewal's error.
type tryAgainError struct{ err error }

func (e *tryAgainError) Error() string        { return e.err.Error() }
func (e *tryAgainError) Unwrap() error        { return e.err }
func (e *tryAgainError) Is(target error) bool { return target == errTryAgain }

// await waits for the renewal r, whose result c delivers, within ctx.
func (o *OAuth) await(ctx context.Context, c <-chan singleflight.Result, r *renewal) error {
	var err error
	select {
	case res := <-c:
		err = res.Err
	case <-ctx.Done():
		if r.reason == "authorize" {
			return &Error{Reason: ReasonPending, Err: ctx.Err()}
		}
		return fmt.Errorf("%w: waiting for a token: %w", ErrUnavailable, ctx.Err())
	}
	if err != nil && (isUnavailable(err) || errors.Is(err, errTryAgain)) {
		return &tryAgainError{err: err}
	}
	return err
}

func (o *OAuth) validLocked(now time.Time) bool {
	return o.tok != nil && o.tok.AccessToken != "" && (o.tok.Expiry.IsZero() || now.Before(o.tok.Expiry))
}

// canRenewLocked: a refresh ahead of expiry needs a refresh token or a
// grant without a user (client_credentials, JWT bearer), never a user.
func (o *OAuth) canRenewLocked() bool {
	return o.tok.RefreshToken != "" || o.cfg.GrantType == GrantClientCredentials || o.assertionGrant() ||
		(o.cfg.Authorize == nil && o.cfg.ClientID != "" && (o.cfg.ClientSecret != "" || o.cfg.PrivateKey != nil))
}
