package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Key names one grant in a Store. Credentials are keyed by issuer
// (SEP-2352): a client registered at one authorization server is unknown
// to another, and a token for one resource (RFC 8707) is refused by
// another. A Key is a plain value, safe to copy and share.
type Key struct {
	Issuer   string // the authorization server's issuer
	Resource string // the protected resource's indicator
	// Client is the configured client ID, else the client ID metadata
	// document's URL, else "dynamic " and the redirect URI: the
	// registration made here, read back by the next process.
	Client string
}

// ID is the key as one short name (hex SHA-256 of its fields), safe in a
// file name or a Redis key; it shows nothing of the key.
func (k Key) ID() string {
	h := sha256.New()
	for _, f := range []string{k.Issuer, k.Resource, k.Client} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Registration is who the client is at the issuer: a configured client,
// or one registered dynamically (RFC 7591), which only the store
// remembers. A plain value, safe to share once it is no longer written.
type Registration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"token_endpoint_auth_method,omitempty"` // none, client_secret_basic, client_secret_post, private_key_jwt
}

// Token is an access token and what renews it. A plain value, safe to
// share once it is no longer written; a Store hands out copies.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"` // zero: used until a 401
	Scopes       []string  `json:"scopes,omitempty"`
}

// Grant is what a Store keeps under a Key. Version is the store's: 0 is
// nothing stored, and every write adds one. A plain value; the pointers
// in one a Store returns are the caller's own.
type Grant struct {
	Version      int64         `json:"version"`
	Registration *Registration `json:"registration,omitempty"`
	Token        *Token        `json:"token,omitempty"` // nil: none, or cleared after invalid_grant
	// DPoP is the private key the grant's tokens are bound to (RFC 9449),
	// nil without DPoP or with Config.DPoPKey. As sensitive as the
	// refresh token: see DPoPKey.
	DPoP *DPoPKey `json:"dpop_key,omitempty"`
}

// clone is g with nothing shared: a store hands out copies.
func (g Grant) clone() Grant {
	if g.Registration != nil {
		r := *g.Registration
		g.Registration = &r
	}
	if g.Token != nil {
		t := *g.Token
		t.Scopes = slices.Clone(t.Scopes)
		g.Token = &t
	}
	if g.DPoP != nil {
		k := *g.DPoP
		g.DPoP = &k
	}
	return g
}

// UpdateFunc is a renewal run under a Store's lock: current is the grant
// stored when the lock was taken. It returns the grant to write (nil: write
// nothing). ctx ends with Update's context, or when the store can no longer
// vouch for the lock (a lease it could not renew): a renewal must not go on
// unlocked.
type UpdateFunc func(ctx context.Context, current Grant) (next *Grant, err error)

// Store is where the grant lives: the client registration and the tokens,
// keyed by issuer, resource and client, with a version. Every renewal
// (refresh, client credentials, authorization, registration) runs under
// the store's lock for its key, taken before the request to the
// authorization server, so that one grant is renewed once across every
// process that shares the store: a rotating refresh token spent twice
// revokes the grant.
//
// A Store keeps every field of a Grant, DPoP included: a DPoP-bound
// refresh token is of no use without its key.
//
// Implementations are safe for concurrent use, also by several processes
// where they say so.
type Store interface {
	// Load returns the grant stored under key without taking its lock
	// (the zero Grant when there is none). A store that cannot be reached
	// is an error that errors.Is ErrStoreUnavailable.
	Load(ctx context.Context, key Key) (Grant, error)
	// Update takes key's lock, waiting for it within ctx, reads the grant
	// and calls fn with it while holding the lock. A grant fn returns is
	// written with a compare-and-swap on the version (Version+1 if the
	// stored version is still current's, else ErrConflict), also when fn
	// returns an error with it. Update returns the grant stored when it
	// returns and fn's error, or why the lock, the read or the write
	// failed: ErrStoreUnavailable when the store cannot be reached or the
	// lock cannot be had within ctx.
	Update(ctx context.Context, key Key, fn UpdateFunc) (Grant, error)
}

// ErrStoreUnavailable is in the chain of an error from a Store that could
// not be reached, or whose lock could not be had in time. It is also
// ErrUnavailable: the request did not run.
var ErrStoreUnavailable = fmt.Errorf("auth: grant store unavailable: %w", ErrUnavailable)

// ErrConflict is a write refused because the stored version is no longer
// the one read under the lock: another holder wrote after this one's lock
// lapsed.
var ErrConflict = errors.New("auth: the stored grant changed under the lock")

// MemoryStore keeps grants in this process and forgets them at exit.
// It is safe for concurrent use.
type MemoryStore struct {
	// Lock order: a key's lock (a holder runs a renewal under it), then
	// mu. mu is never held while waiting for a lock or calling fn.
	mu     sync.Mutex
	locks  map[Key]chan struct{} // a key's lock: held while its channel holds a value
	grants map[Key]Grant
}

// NewMemoryStore returns an empty MemoryStore: the default Store, one
// process.
func NewMemoryStore() Store { return newMemoryStore() }

func newMemoryStore() *MemoryStore {
	return &MemoryStore{locks: map[Key]chan struct{}{}, grants: map[Key]Grant{}}
}

// Load returns the grant stored under key.
func (s *MemoryStore) Load(_ context.Context, key Key) (Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[key].clone(), nil
}

// Update runs fn under key's lock and writes what it returns.
func (s *MemoryStore) Update(ctx context.Context, key Key, fn UpdateFunc) (Grant, error) {
	s.mu.Lock()
	l := s.locks[key]
	if l == nil {
		l = make(chan struct{}, 1)
		s.locks[key] = l
	}
	s.mu.Unlock()
	select {
	case l <- struct{}{}:
	case <-ctx.Done():
		return Grant{}, fmt.Errorf("%w: waiting for the lock: %w", ErrStoreUnavailable, ctx.Err())
	}
	defer func() { <-l }()
	return update(ctx, key, s, fn, s.write)
}

func (s *MemoryStore) write(_ context.Context, key Key, g Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grants[key].Version != g.Version-1 {
		return ErrConflict
	}
	s.grants[key] = g.clone()
	return nil
}

// update is Update once the lock is held: read, fn, compare-and-swap
// through write (which writes g if the stored version is g.Version-1).
func update(ctx context.Context, key Key, s Store, fn UpdateFunc, write func(context.Context, Key, Grant) error) (Grant, error) {
	cur, err := s.Load(ctx, key)
	if err != nil {
		return Grant{}, err
	}
	next, ferr := fn(ctx, cur.clone())
	if next == nil {
		return cur, ferr
	}
	g := next.clone()
	g.Version = cur.Version + 1
	if err := write(ctx, key, g); err != nil {
		return cur, errors.Join(ferr, err)
	}
	return g, ferr
}
