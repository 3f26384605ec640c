package auth

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/autherr"
)

// Reasons an Error gives: why a request could not be authorized
// (autherr holds them, for the client's policy).
const (
	ReasonNoToken          = autherr.ReasonNoToken
	ReasonTokenRejected    = autherr.ReasonTokenRejected
	ReasonInvalidGrant     = autherr.ReasonInvalidGrant
	ReasonInvalidClient    = autherr.ReasonInvalidClient
	ReasonDenied           = autherr.ReasonDenied
	ReasonStateMismatch    = autherr.ReasonStateMismatch
	ReasonResourceMismatch = autherr.ReasonResourceMismatch
	ReasonIssuerMismatch   = autherr.ReasonIssuerMismatch
	ReasonNoGrant          = autherr.ReasonNoGrant
	ReasonNoRegistration   = autherr.ReasonNoRegistration
	ReasonPending          = autherr.ReasonPending
)

// Error is a request that could not be authorized. It never contains a
// token, code, verifier or secret. Its Reason is one of the Reason
// constants.
type Error = autherr.Error

// InsufficientScopeError is a request the server refused for want of
// scope (403 insufficient_scope) that the client could not get: the
// scopes were already held or refused, or the request was refused for want
// of scope on its third send, the limit for one request (three tokens when
// no 401 came first).
type InsufficientScopeError = autherr.InsufficientScopeError

// ErrUnavailable is in the chain of an error when the authorization server
// could not be reached (down, 5xx, 429) until the request's context ended:
// the request did not run.
var ErrUnavailable = autherr.ErrUnavailable

// unavailableError is one failed attempt to reach the authorization
// server, with the pause it asked for.
type unavailableError struct {
	err        error
	retryAfter time.Duration
}

func (e *unavailableError) Error() string {
	return "authorization server unavailable: " + e.err.Error()
}
func (e *unavailableError) Unwrap() error { return e.err }

func unavailable(err error, retryAfter time.Duration) error {
	return &unavailableError{err: err, retryAfter: retryAfter}
}

// ReasonOf is the class of a failed renewal's error, for telemetry: the
// Reason of an *Error ("invalid_grant", "denied"...), "unavailable" when
// the authorization server or the grant store could not be reached, or
// "_OTHER"; "" for nil.
func ReasonOf(err error) string {
	var ae *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ae):
		return ae.Reason
	case isUnavailable(err), errors.Is(err, ErrUnavailable):
		return "unavailable"
	}
	return "_OTHER"
}

func isUnavailable(err error) bool {
	var u *unavailableError
	return errors.As(err, &u)
}

// retryAfter is a response's Retry-After in seconds (dates are rare from
// authorization servers and read as none).
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(min(n, 3600)) * time.Second
}
