package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/resilientmcp/resilientmcp/auth"
)

// OAuthConfig is how a client authorizes with MCP's OAuth 2.1 flow:
// discovery (RFC 9728, RFC 8414, OpenID), registration (client ID metadata
// documents, RFC 7591), PKCE, resource indicators (RFC 8707), scope
// step-up, the client_credentials grant, and DPoP-bound tokens (RFC 9449).
// See auth.Config for each field.
type OAuthConfig = auth.Config

// GrantType is how the client obtains tokens: GrantAuthorizationCode (a
// user, through OAuthConfig.Authorize), GrantClientCredentials, or
// GrantJWTBearer (OAuthConfig.Enterprise or OAuthConfig.Workload).
type GrantType = auth.GrantType

// The grant types.
const (
	GrantAuthorizationCode = auth.GrantAuthorizationCode
	GrantClientCredentials = auth.GrantClientCredentials
	GrantJWTBearer         = auth.GrantJWTBearer
)

// InsufficientScopeError is a call the server refused for want of scope
// (403 insufficient_scope) that no authorization could give: the scopes
// were held already or refused, or the request was refused for want of
// scope on its third send (two step-ups, the limit for one HTTP request).
// It did not run.
type InsufficientScopeError = auth.InsufficientScopeError

// WithOAuth authorizes every request with MCP's OAuth 2.1 flow. One token
// source serves all the client's sessions and goroutines: it refreshes once
// per expiry (10 % of the token's lifetime ahead, at most 5 min), answers a
// 401 with one refresh for every request refused with the same token and
// sends the requests again, steps up on 403 insufficient_scope, and paces
// an unreachable authorization server with one backoff while a still-valid
// token keeps working. A lost grant (invalid_grant, revoked) fails calls at
// once with ErrAuthorizationRequired and, if cfg.Authorize is set, starts
// one authorization in the background; Authorize recovers on demand.
// Tokens, codes, verifiers and secrets never appear in logs, errors or
// Stats, and the token is sent only to the endpoint's origin.
func WithOAuth(cfg OAuthConfig) Option {
	return optionFunc(func(o *options) {
		switch {
		case cfg.Authorize != nil && cfg.RedirectURI == "" && cfg.GrantType != GrantClientCredentials:
			o.invalidf("WithOAuth: Authorize needs a RedirectURI")
		case cfg.GrantType == GrantClientCredentials && cfg.ClientID == "":
			o.invalidf("WithOAuth: the client_credentials grant needs a ClientID")
		case cfg.GrantType != "" && cfg.GrantType != GrantAuthorizationCode && cfg.GrantType != GrantClientCredentials && cfg.GrantType != GrantJWTBearer:
			o.invalidf("WithOAuth: unknown GrantType %q", cfg.GrantType)
		}
		if err := cfg.Validate(); err != nil {
			o.invalidf("WithOAuth: %w", err)
		}
		if cfg.RedirectURI != "" {
			if u, err := url.Parse(cfg.RedirectURI); err != nil || u.Scheme == "" {
				o.invalidf("WithOAuth: RedirectURI %q is not an absolute URL", cfg.RedirectURI)
			}
		}
		o.oauth = &cfg
	})
}

// Authorize runs the OAuth authorization now (OAuthConfig.Authorize, or the
// client_credentials grant), joining one under way. It is how a lost grant
// is recovered: calls fail with ErrAuthorizationRequired until it succeeds.
// Without WithOAuth it is an error.
func (c *ResilientClient) Authorize(ctx context.Context) error {
	if c.oauth == nil {
		return errors.New("resilientmcp: Authorize: the client has no WithOAuth")
	}
	if c.closed.Load() {
		return ErrClosed
	}
	err := c.oauth.Authorize(ctx)
	var ae *auth.Error
	if errors.As(err, &ae) {
		return authorizationRequired(ae.Reason, err)
	}
	if err != nil {
		return fmt.Errorf("resilientmcp: Authorize: %w", err)
	}
	return nil
}

// authLayer returns the token layer for the options, if any: it sits under
// the tracker, so that the redirect check above it cannot see the token's
// header (the layer checks each request's origin itself).
func (c *ResilientClient) authLayer(next http.RoundTripper, endpoint *url.URL) http.RoundTripper {
	o := c.opts
	switch {
	case o.bearerToken != nil:
		return &auth.Transport{Base: next, Source: auth.NewSource(o.bearerToken), Origin: endpoint, Resend: c.obs.ResendHook()}
	case o.oauth != nil:
		c.oauth = auth.NewOAuth(endpoint, *o.oauth, auth.Env{
			ClientName: o.implementation().Name,
			// The authorization server is reached with the user's
			// transport but never through the token layer.
			HTTPClient: &http.Client{Transport: next, Timeout: 30 * time.Second},
			Logger:     o.logger,
			NewBackOff: o.newBackOff,
			OnRenewal:  c.obs.RenewalHook(),
		})
		return &auth.Transport{Base: next, Source: c.oauth, Origin: endpoint, Resend: c.obs.ResendHook()}
	}
	return nil
}
