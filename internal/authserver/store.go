package authserver

import (
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"
	"time"
)

// codeLifetime is how long an authorization code can be exchanged.
const codeLifetime = 60 * time.Second

// client is a registered (or pre-registered) client.
type client struct {
	id     string
	secret string // "" for a public client
	// authMethod is the registered token_endpoint_auth_method; the
	// pre-registered client leaves it empty and accepts either secret
	// method.
	authMethod    string
	redirectURIs  []string
	preRegistered bool // any loopback redirect URI is accepted
}

// grant is one authorization and everything descended from it: the access
// and refresh tokens a rotation chain produces all share it, so revoking
// it revokes the whole family, as real providers do on refresh token reuse.
type grant struct {
	clientID string
	resource string   // RFC 8707 audience; "" binds the tokens to none
	scope    []string // what was granted; refreshes may narrow, never widen
	revoked  bool
	jkt      string // the DPoP key its refresh tokens are bound to, "" if none
}

type accessToken struct {
	grant   *grant
	scope   []string
	expires time.Time
	epoch   int64  // Server.epoch when issued
	jkt     string // the DPoP key it is bound to (cnf.jkt), "" for a bearer token
}

type refreshToken struct {
	grant *grant
	// used marks a rotated token. It is kept, not deleted, so that its
	// reuse can be told apart from a token that never existed.
	used bool
}

type authCode struct {
	clientID    string
	redirectURI string
	challenge   string // PKCE S256 code_challenge
	resource    string
	scope       []string
	expires     time.Time
	used        bool
	// grant is set once the code is exchanged, so that a replayed code
	// revokes what it issued (OAuth 2.1 §4.1.3).
	grant *grant
}

// tokenResponse is the successful token endpoint answer (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	// IssuedTokenType is the token exchange's (RFC 8693 §2.2.1).
	IssuedTokenType string `json:"issued_token_type,omitempty"`
}

// issueLocked issues an access token for g with scope, bound to the DPoP
// key jkt if not "", and a refresh token if refresh is true and the config
// allows it. s.mu must be held.
func (s *Server) issueLocked(g *grant, scope []string, refresh bool, jkt string) tokenResponse {
	life := s.cfg.AccessTokenLifetime
	at := randomString(32)
	s.access[at] = &accessToken{grant: g, scope: scope, expires: time.Now().Add(life), epoch: s.epoch, jkt: jkt}
	s.stats.tokensIssued.Add(1)
	tokenType := "Bearer"
	if jkt != "" {
		tokenType = "DPoP"
		s.stats.dpopBoundTokens.Add(1)
	}
	resp := tokenResponse{
		AccessToken: at,
		TokenType:   tokenType,
		ExpiresIn:   int64((life + time.Second - 1) / time.Second),
		Scope:       strings.Join(scope, " "),
	}
	if refresh && !s.cfg.NoRefreshTokens {
		rt := randomString(32)
		s.refresh[rt] = &refreshToken{grant: g}
		resp.RefreshToken = rt
	}
	return resp
}

// validLocked returns the access token if Protect should accept it, nil
// otherwise. s.mu must be held.
func (s *Server) validLocked(token string) *accessToken {
	t := s.access[token]
	if t == nil || t.grant.revoked || t.epoch != s.epoch || !time.Now().Before(t.expires) {
		return nil
	}
	return t
}

// protectsLocked reports whether some Protect call guards resource. s.mu
// must be held.
func (s *Server) protectsLocked(resource string) bool { return s.resources[resource] }

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// randomString returns n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails since Go 1.24: it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b)
}
