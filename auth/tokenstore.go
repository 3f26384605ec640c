package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
)

// tokenStore is mcp-go's transport.TokenStore as a Store, for users who
// have one: the tokens are written to it, the registration is kept in
// memory, and the lock is this process's. It is one client's, in one
// process, as a TokenStore always was (it holds one token, whatever the
// key).
//
// A tokenStore is safe for concurrent use if its TokenStore is.
type tokenStore struct {
	ts  transport.TokenStore
	mem *MemoryStore // the lock, the registration and the version
}

func newTokenStore(ts transport.TokenStore) *tokenStore {
	return &tokenStore{ts: ts, mem: newMemoryStore()}
}

// Load reads the registration (and the DPoP key) from memory and the
// token from the TokenStore.
func (s *tokenStore) Load(ctx context.Context, key Key) (Grant, error) {
	g, _ := s.mem.Load(ctx, key)
	t, err := s.ts.GetToken(ctx)
	switch {
	case errors.Is(err, transport.ErrNoToken):
	case err != nil:
		return Grant{}, fmt.Errorf("%w: the token store: %w", ErrStoreUnavailable, err)
	case t != nil && t.AccessToken != "":
		g.Token = &Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken,
			Expiry: t.ExpiresAt, Scopes: strings.Fields(t.Scope)}
	}
	return g, nil
}

// Update runs fn under this process's lock for key.
func (s *tokenStore) Update(ctx context.Context, key Key, fn UpdateFunc) (Grant, error) {
	return s.mem.Update(ctx, key, func(ctx context.Context, _ Grant) (*Grant, error) {
		cur, err := s.Load(ctx, key)
		if err != nil {
			return nil, err
		}
		next, ferr := fn(ctx, cur)
		if next == nil {
			return nil, ferr
		}
		t := &transport.Token{}
		if next.Token != nil {
			t = &transport.Token{AccessToken: next.Token.AccessToken, TokenType: next.Token.TokenType,
				RefreshToken: next.Token.RefreshToken, ExpiresAt: next.Token.Expiry, Scope: strings.Join(next.Token.Scopes, " ")}
		}
		if err := s.ts.SaveToken(ctx, t); err != nil {
			return nil, errors.Join(ferr, fmt.Errorf("%w: saving the token: %w", ErrStoreUnavailable, err))
		}
		return &Grant{Registration: next.Registration, DPoP: next.DPoP}, ferr
	})
}
