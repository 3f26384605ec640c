// Package autherr holds the errors of package auth, in a leaf that
// imports only the standard library, so that the client's policy
// (client/internal/policy) can read them without importing auth and
// x/oauth2. Users name them through auth, which aliases each.
package autherr

import (
	"errors"
	"fmt"
	"strings"
)

// Reasons an Error gives: why a request could not be authorized.
const (
	ReasonNoToken          = "no_token"          // no token, and no way to get one without a user
	ReasonTokenRejected    = "token_rejected"    // the server refused a token just obtained
	ReasonInvalidGrant     = "invalid_grant"     // the refresh token was refused: revoked, expired or reused
	ReasonInvalidClient    = "invalid_client"    // the authorization server refused the client's credentials
	ReasonDenied           = "denied"            // the authorization was denied or failed
	ReasonStateMismatch    = "state_mismatch"    // the redirect carried another state, or went elsewhere
	ReasonResourceMismatch = "resource_mismatch" // the protected resource metadata names another resource
	// ReasonIssuerMismatch: a mix-up refused. The authorization response's
	// iss names another issuer, or is missing where the server promised it,
	// or the authorization server metadata names another issuer than the
	// one its URL was built from (RFC 9207, RFC 8414 §3.3). No code was
	// exchanged and no metadata endpoint used.
	ReasonIssuerMismatch = "issuer_mismatch"
	ReasonNoGrant        = "no_grant"        // no grant both sides support, or no authorization server
	ReasonNoRegistration = "no_registration" // no client ID, metadata document or registration endpoint
	ReasonPending        = "authorization_pending"
)

// Error is a request that could not be authorized. It never contains a
// token, code, verifier or secret.
type Error struct {
	Reason string
	Err    error // why, if known (its text never holds a credential)
}

// Error says why, never with a token.
func (e *Error) Error() string {
	if e.Err == nil {
		return "auth: " + e.Reason
	}
	return fmt.Sprintf("auth: %s: %v", e.Reason, e.Err)
}

// Unwrap is the cause, if known.
func (e *Error) Unwrap() error { return e.Err }

// InsufficientScopeError is a request the server refused for want of
// scope (403 insufficient_scope) that the client could not get: the
// scopes were already held or refused, or the request was refused for want
// of scope on its third send, the limit for one request (three tokens when
// no 401 came first).
type InsufficientScopeError struct {
	Scopes []string // what the server asked for
	Err    error    // why no token with them could be had, if known
}

func (e *InsufficientScopeError) Error() string {
	s := "auth: insufficient scope: the server wants " + strings.Join(e.Scopes, " ")
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap is the cause, if known.
func (e *InsufficientScopeError) Unwrap() error { return e.Err }

// ErrUnavailable is in the chain of an error when the authorization server
// could not be reached (down, 5xx, 429) until the request's context ended:
// the request did not run.
var ErrUnavailable = errors.New("auth: authorization server unavailable")
