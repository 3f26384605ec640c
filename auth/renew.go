package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"golang.org/x/oauth2"
)

// startLocked starts the one renewal: with scopes nil, a refresh if
// there is a refresh token; else a grant (the user's authorization, or
// client credentials) asking for scopes.
func (o *OAuth) startLocked(scopes []string) *renewal {
	r := &renewal{done: make(chan struct{}), reason: "authorize", scopes: scopes}
	refreshToken := ""
	if o.tok != nil && scopes == nil && o.tok.RefreshToken != "" {
		refreshToken, r.reason = o.tok.RefreshToken, "refresh"
	}
	o.renewing = r
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.run(r, refreshToken)
	}()
	return r
}

func (o *OAuth) run(r *renewal, refreshToken string) {
	timeout := refreshTimeout
	if r.reason == "authorize" {
		timeout += o.cfg.AuthorizeTimeout
	}
	ctx, cancel := context.WithTimeout(o.life, timeout)
	defer cancel()
	tok, scopes, err := o.obtain(ctx, r, refreshToken)

	var saved *transport.Token
	var gen int64
	defer func() {
		// The token store is the user's and may be slow: it is written
		// after the waiters are released, in the order tokens came.
		close(r.done)
		if saved != nil {
			o.save(saved, gen)
		}
	}()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.renewing = nil
	r.err = err
	switch {
	case err == nil:
		o.setLocked(tok, scopes)
		o.lost, o.retryAt = nil, time.Time{}
		o.backoff.Reset()
		if r.reason == "refresh" {
			o.refreshes.Add(1)
		} else {
			o.authorizations.Add(1)
		}
		o.gen++
		saved, gen = o.storedLocked(), o.gen
	case isUnavailable(err):
		var u *unavailableError
		errors.As(err, &u)
		pause := max(o.backoff.NextBackOff(), u.retryAfter)
		o.retryAt = time.Now().Add(pause)
		if r.reason == "refresh" {
			o.refreshFailures.Add(1)
		}
		o.env.Logger.Warn("authorization server unavailable", "step", r.reason, "retry_in", pause, "err", err)
	default:
		if r.reason == "refresh" {
			o.refreshFailures.Add(1)
		}
		if len(r.scopes) > 0 {
			o.refused[key(r.scopes)] = true
		}
		var ae *Error
		if errors.As(err, &ae) && ae.Reason == ReasonResourceMismatch {
			o.disc = nil
		}
		o.env.Logger.Warn("authorization failed", "step", r.reason, "err", err)
		if len(r.scopes) > 0 && o.validLocked(time.Now()) {
			return // a step-up refused: the token held still serves what it did
		}
		o.tok, o.lost = nil, err
		if r.reason == "refresh" && o.cfg.Authorize != nil {
			// The grant is lost: calls fail at once, one authorization
			// starts in the background, later calls use its token.
			o.startLocked(append([]string{}, o.held...))
		}
	}
}

// obtain gets a token for r: discovery and identity first (once).
func (o *OAuth) obtain(ctx context.Context, r *renewal, refreshToken string) (*oauth2.Token, []string, error) {
	d, id, err := o.prepare(ctx)
	if err != nil {
		return nil, nil, err
	}
	if refreshToken != "" {
		tok, err := o.refresh(ctx, d, id, refreshToken)
		o.mu.Lock()
		held := o.held
		o.mu.Unlock()
		return tok, held, err
	}
	grant, err := o.grantFor(d)
	if err != nil {
		return nil, nil, err
	}
	scopes := o.scopesFor(d, r.scopes, grant)
	if grant == GrantClientCredentials {
		tok, err := o.clientCredentials(ctx, d, id, scopes)
		return tok, scopes, err
	}
	tok, err := o.authorizationCode(ctx, d, id, scopes)
	return tok, scopes, err
}

// prepare discovers the authorization server and the client's identity
// there, once; a failure is tried again by the next renewal.
func (o *OAuth) prepare(ctx context.Context) (*discovery, *identity, error) {
	o.mu.Lock()
	d, id, ch := o.disc, o.id, o.challenge
	o.mu.Unlock()
	if d != nil && id != nil {
		return d, id, nil
	}
	d, err := discover(ctx, o.env.HTTPClient, o.endpoint, ch)
	if err != nil {
		return nil, nil, err
	}
	// No registration for a client that could not use it.
	if _, err := o.grantFor(d); err != nil {
		return nil, nil, err
	}
	if id, err = o.identify(ctx, d); err != nil {
		return nil, nil, err
	}
	o.mu.Lock()
	o.disc, o.id = d, id
	o.mu.Unlock()
	return d, id, nil
}

// scopesFor is the scope to ask: the configured scopes; else what a
// step-up wants; else the challenge's; else the protected resource's
// scopes_supported; else none. offline_access is added for the
// authorization-code grant when the authorization server lists it.
func (o *OAuth) scopesFor(d *discovery, want []string, grant GrantType) []string {
	o.mu.Lock()
	ch := o.challenge.Scopes
	o.mu.Unlock()
	var s []string
	switch {
	case len(o.cfg.Scopes) > 0:
		s = union(o.cfg.Scopes, want)
	case len(want) > 0:
		s = slices.Clone(want)
	case len(ch) > 0:
		s = slices.Clone(ch)
	default:
		s = slices.Clone(d.scopesSupported)
	}
	if grant == GrantAuthorizationCode && slices.Contains(d.as.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(s, "offline_access")
	}
	return s
}

// setLocked makes tok current and schedules its refresh: 10 % of its
// lifetime before expiry, at most 5 min. A token without expires_in is
// used until a 401.
func (o *OAuth) setLocked(tok *oauth2.Token, scopes []string) {
	if granted := strings.Fields(fmt.Sprint(tok.Extra("scope"))); tok.Extra("scope") != nil && len(granted) > 0 {
		scopes = granted
	}
	o.tok, o.held = tok, union(nil, scopes)
	o.refreshAt = time.Time{}
	if !tok.Expiry.IsZero() {
		ahead := min(time.Until(tok.Expiry)/10, 5*time.Minute)
		o.refreshAt = tok.Expiry.Add(-ahead)
	} else {
		o.refreshAt = time.Unix(1<<62, 0)
	}
}

// load reads the token store once.
func (o *OAuth) load(ctx context.Context) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.loaded {
		return
	}
	o.loaded = true
	t, err := o.cfg.TokenStore.GetToken(ctx)
	if err != nil || t == nil || t.AccessToken == "" {
		return
	}
	o.challenged = true
	o.setLocked(&oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.ExpiresAt}, strings.Fields(t.Scope))
}

// storedLocked is the current token as the token store keeps it.
func (o *OAuth) storedLocked() *transport.Token {
	return &transport.Token{AccessToken: o.tok.AccessToken, TokenType: o.tok.TokenType, RefreshToken: o.tok.RefreshToken,
		Scope: strings.Join(o.held, " "), ExpiresAt: o.tok.Expiry}
}

// save writes t, the gen-th token obtained, to the token store unless a
// newer one was written first.
func (o *OAuth) save(t *transport.Token, gen int64) {
	o.saveMu.Lock()
	defer o.saveMu.Unlock()
	if gen <= o.savedGen {
		return
	}
	o.savedGen = gen
	ctx, cancel := context.WithTimeout(o.life, refreshTimeout)
	defer cancel()
	if err := o.cfg.TokenStore.SaveToken(ctx, t); err != nil {
		o.env.Logger.Warn("saving the token failed", "err", err)
	}
}

func union(a, b []string) []string {
	s := append(slices.Clone(a), b...)
	sort.Strings(s)
	return slices.Compact(s)
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func key(scopes []string) string { return strings.Join(union(nil, scopes), " ") }
