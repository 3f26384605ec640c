// Package authserver runs a loopback OAuth 2.1 authorization server for
// tests: it stands in for a real provider so that a client's whole OAuth
// lifecycle (discovery, dynamic registration, authorization code with PKCE,
// rotating refresh tokens, client credentials, outages and revocation) can
// be exercised over real HTTP on 127.0.0.1. It can also play an
// enterprise's identity provider (ID tokens, and ID-JAGs for them by token
// exchange) or a workload's platform, and take their JWTs in the JWT
// bearer grant (see assertions.go).
//
// There is no user: the authorization endpoint approves at once (or refuses,
// see SetDeny) and redirects without showing anything. Access tokens are
// opaque random strings bound to a resource (RFC 8707) and a scope; Protect
// guards a resource server with them. Nothing is logged, so no token, code
// or secret ever reaches test output.
package authserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes the server built by Start. The zero value is usable.
// Start copies it, so changing a Config afterwards has no effect; a Config
// itself is plain data with no synchronisation.
type Config struct {
	// AccessTokenLifetime is the lifetime of access tokens. expires_in is
	// sent in whole seconds, rounded up, but the exact duration is
	// enforced. Default 2s.
	AccessTokenLifetime time.Duration
	// ScopesSupported is advertised in the authorization server metadata
	// and in the protected resource metadata; requested scopes must be
	// among them. Default mcp:read, mcp:write, offline_access.
	ScopesSupported []string
	// ClientID and ClientSecret, if ClientID is set, pre-register a client
	// that may use any redirect URI on http://127.0.0.1 or
	// http://localhost. With a secret it is confidential, authenticates
	// with client_secret_basic or client_secret_post, and may use the
	// client_credentials grant; without one it is public.
	ClientID, ClientSecret string
	// NoRefreshTokens, if true, has no grant issue a refresh token.
	NoRefreshTokens bool
	// NoIssParameter, if true, is a server from before RFC 9207: its
	// authorization responses carry no iss, and its metadata does not
	// promise one. By default both do.
	NoIssParameter bool
	// MetadataIssuer, if set, is the issuer the metadata names instead of
	// the server's URL: a poisoned or misconfigured document, which a
	// client must not use (RFC 8414 §3.3).
	MetadataIssuer string
	// TrustedIssuers are the servers whose JWTs (ID-JAGs, workload
	// assertions) this one takes in the JWT bearer grant. None: the grant
	// refuses every assertion.
	TrustedIssuers []*Server
	// JAGClientID is the client_id claim of the ID-JAGs this server issues
	// as an identity provider: the client's ID at the resource's
	// authorization server. Default: the client's ID here.
	JAGClientID string
	// JAGLifetime is the lifetime of those ID-JAGs. Default 5 min.
	JAGLifetime time.Duration
	// SingleUseAssertions, if true, has the JWT bearer grant refuse an
	// assertion whose jti it took before (invalid_grant), as some
	// authorization servers do with ID-JAGs. By default one may be
	// presented again until it expires.
	SingleUseAssertions bool
	// DPoP, if true, has the server take DPoP proofs (RFC 9449): it
	// advertises dpop_signing_alg_values_supported; a token request with
	// a proof gets a token bound to the proof's key (token_type DPoP; a
	// public client's refresh token is bound too, and refreshed only with
	// a proof by that key); and Protect takes a bound token only with the
	// DPoP scheme and a valid proof for that request (htm, htu, iat, a jti
	// never seen, ath, the key). Without it, a DPoP header is ignored.
	DPoP bool
	// DPoPNonce, with DPoP, has the token endpoint and Protect each want a
	// nonce of theirs in every proof (RFC 9449 §8, §9): a proof without the
	// current or the previous one is answered use_dpop_nonce with the
	// current one, which every answer to a proof carries too. See
	// RotateDPoPNonces.
	DPoPNonce bool
}

// Stats is a snapshot of what the server did; every counter only grows.
// It is a plain value, safe to copy and share once returned.
type Stats struct {
	TokensIssued           int64 // access tokens issued by any grant
	Refreshes              int64 // successful refresh_token grants
	ReuseDetected          int64 // used refresh tokens presented again (each revokes its grant)
	Authorizations         int64 // authorization codes issued by /authorize
	ClientCredentials      int64 // successful client_credentials grants
	Registrations          int64 // dynamic client registrations
	TokenRequests          int64 // POSTs to the token endpoint, whatever the answer
	TokenRequestsWhileDown int64 // of those, answered 503 because of SetDown
	Refused401, Refused403 int64 // requests Protect refused (a DPoP nonce challenge is not counted)

	DPoPProofs          int64 // DPoP proofs accepted, at the token endpoint and by Protect
	DPoPNonceChallenges int64 // use_dpop_nonce answers, from the token endpoint and from Protect
	DPoPReplays         int64 // proofs refused because their jti had been seen before
	DPoPRefused         int64 // proofs refused for any other reason (a replay included), and bound tokens sent without one
	DPoPBoundTokens     int64 // access tokens issued bound to a key
	TokenExchanges      int64 // ID-JAGs issued by the token exchange (as an identity provider)
	JWTBearerGrants     int64 // successful JWT bearer grants
}

// Server is a running authorization server. It is safe for concurrent use;
// every switch takes effect at once.
type Server struct {
	cfg    Config
	url    string
	httpS  *http.Server
	served chan struct{} // closed when Serve returns

	key *ecdsa.PrivateKey // signs the JWTs it issues (ID tokens, ID-JAGs, workload assertions)

	down atomic.Bool
	deny atomic.Bool

	mu        sync.Mutex // guards the fields below and everything they point to
	clients   map[string]*client
	codes     map[string]*authCode
	access    map[string]*accessToken
	refresh   map[string]*refreshToken
	resources map[string]bool // resources some Protect call guards
	required  []string        // RequireScopes
	subjects  []string        // AssertionSubjects
	jtis      map[string]bool // the assertions taken, for SingleUseAssertions
	// epoch is bumped by InvalidateAccessTokens: an access token is only
	// valid in the epoch it was issued in.
	epoch int64
	// DPoP: the token endpoint's and Protect's nonces, and the jti of
	// every proof seen within twice proofWindow.
	asNonce, rsNonce nonces
	dpopJTIs         map[string]time.Time

	stats struct {
		tokensIssued, refreshes, reuseDetected, authorizations atomic.Int64
		clientCredentials, registrations                       atomic.Int64
		tokenRequests, tokenRequestsWhileDown                  atomic.Int64
		refused401, refused403                                 atomic.Int64
		tokenExchanges, jwtBearerGrants                        atomic.Int64
		dpopProofs, dpopNonceChallenges, dpopReplays           atomic.Int64
		dpopRefused, dpopBoundTokens                           atomic.Int64
	}
}

// Defaults for the zero Config.
const defaultLifetime = 2 * time.Second

var defaultScopes = []string{"mcp:read", "mcp:write", "offline_access"}

// Start listens on 127.0.0.1 on a free port and serves cfg until Close.
// It is safe for concurrent use; each call starts an independent server.
func Start(cfg Config) (*Server, error) {
	if cfg.AccessTokenLifetime <= 0 {
		cfg.AccessTokenLifetime = defaultLifetime
	}
	if cfg.ScopesSupported == nil {
		cfg.ScopesSupported = defaultScopes
	}
	cfg.ScopesSupported = slices.Clone(cfg.ScopesSupported)
	if cfg.JAGLifetime <= 0 {
		cfg.JAGLifetime = defaultJAGLifetime
	}
	cfg.TrustedIssuers = slices.Clone(cfg.TrustedIssuers)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("authserver: key: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("authserver: listen: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		key:       key,
		url:       "http://" + ln.Addr().String(),
		served:    make(chan struct{}),
		clients:   map[string]*client{},
		codes:     map[string]*authCode{},
		access:    map[string]*accessToken{},
		refresh:   map[string]*refreshToken{},
		resources: map[string]bool{},
		jtis:      map[string]bool{},
		dpopJTIs:  map[string]time.Time{},
	}
	s.asNonce.rotate()
	s.rsNonce.rotate()
	if cfg.ClientID != "" {
		s.clients[cfg.ClientID] = &client{id: cfg.ClientID, secret: cfg.ClientSecret, preRegistered: true}
	}
	s.httpS = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.httpS.Serve(ln)
	}()
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serveMetadata)
	mux.HandleFunc("GET /.well-known/openid-configuration", s.serveMetadata)
	mux.HandleFunc("POST /register", s.serveRegister)
	mux.HandleFunc("GET /authorize", s.serveAuthorize)
	mux.HandleFunc("POST /token", s.serveToken)
	mux.HandleFunc("POST /revoke", s.serveRevoke)
	return mux
}

// URL returns the issuer, "http://127.0.0.1:PORT" with no trailing slash.
// It is safe for concurrent use.
func (s *Server) URL() string { return s.url }

// Close stops the server, closing every connection, and returns once it has
// stopped serving. Guards returned by Protect keep working. It is safe for
// concurrent use and idempotent.
func (s *Server) Close() {
	_ = s.httpS.Close()
	<-s.served
}

// SetDown simulates an outage: while down, every endpoint of the
// authorization server answers 503 without Retry-After. Protect keeps
// validating tokens already issued, as a resource server that checks tokens
// locally would. It is safe for concurrent use.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// SetDeny makes the authorization endpoint refuse every request from now on
// (or no longer), redirecting with error=access_denied as when a user
// declines consent. It is safe for concurrent use.
func (s *Server) SetDeny(deny bool) { s.deny.Store(deny) }

// InvalidateAccessTokens makes Protect refuse every access token issued so
// far with invalid_token; refresh tokens stay valid, so a client recovers
// by refreshing. It is safe for concurrent use.
func (s *Server) InvalidateAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
}

// Revoke revokes every grant made so far: all access tokens are refused,
// all refresh tokens answer invalid_grant, and authorization codes not yet
// exchanged are forgotten. Grants made afterwards are unaffected. It is
// safe for concurrent use.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Every grant issued at least one access token when it was made, so
	// this reaches them all.
	for _, t := range s.access {
		t.grant.revoked = true
	}
	clear(s.codes)
}

// RequireScopes makes Protect answer 403 insufficient_scope to a valid token
// that lacks any of scopes; with no arguments nothing is required. It is
// safe for concurrent use.
func (s *Server) RequireScopes(scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.required = slices.Clone(scopes)
}

// ValidToken reports whether token is an access token Protect currently
// accepts: issued here, not expired, invalidated or revoked. The resource it
// is bound to and RequireScopes are not considered. It is safe for
// concurrent use.
func (s *Server) ValidToken(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validLocked(token) != nil
}

// Stats returns a snapshot of the counters. It is safe for concurrent use;
// counters updated concurrently with it may or may not be included.
func (s *Server) Stats() Stats {
	st := &s.stats
	return Stats{
		TokensIssued:           st.tokensIssued.Load(),
		Refreshes:              st.refreshes.Load(),
		ReuseDetected:          st.reuseDetected.Load(),
		Authorizations:         st.authorizations.Load(),
		ClientCredentials:      st.clientCredentials.Load(),
		Registrations:          st.registrations.Load(),
		TokenRequests:          st.tokenRequests.Load(),
		TokenRequestsWhileDown: st.tokenRequestsWhileDown.Load(),
		Refused401:             st.refused401.Load(),
		Refused403:             st.refused403.Load(),
		TokenExchanges:         st.tokenExchanges.Load(),
		JWTBearerGrants:        st.jwtBearerGrants.Load(),
		DPoPProofs:             st.dpopProofs.Load(),
		DPoPNonceChallenges:    st.dpopNonceChallenges.Load(),
		DPoPReplays:            st.dpopReplays.Load(),
		DPoPRefused:            st.dpopRefused.Load(),
		DPoPBoundTokens:        st.dpopBoundTokens.Load(),
	}
}

// refuseIfDown answers 503 and reports true while SetDown is in effect.
func (s *Server) refuseIfDown(w http.ResponseWriter) bool {
	if !s.down.Load() {
		return false
	}
	writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the authorization server is down")
	return true
}
