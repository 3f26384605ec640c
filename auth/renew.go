package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

// startLocked starts the one renewal: with scopes nil, a refresh if
// there is a refresh token; else a grant (the user's authorization, or
// client credentials) asking for scopes. It returns the channel its
// result comes on.
func (o *OAuth) startLocked(scopes []string) (<-chan singleflight.Result, *renewal) {
	r := &renewal{reason: "authorize", scopes: scopes, started: time.Now()}
	if o.tok != nil {
		r.from = o.tok.AccessToken
		if scopes == nil && o.tok.RefreshToken != "" {
			r.reason = "refresh"
		}
	}
	o.renewing = r
	o.wg.Add(1)
	c := o.flights.DoChan(renewalKey, func() (any, error) {
		defer o.wg.Done()
		return nil, o.run(r)
	})
	return c, r
}

// run is the renewal r, detached from the callers who wait for it.
func (o *OAuth) run(r *renewal) error {
	timeout := refreshTimeout
	if r.reason == "authorize" {
		timeout += o.cfg.AuthorizeTimeout
	}
	ctx, cancel := context.WithTimeout(o.life, timeout)
	defer cancel()
	got, err := o.obtain(ctx, r)
	o.renewed(r, got, err)

	o.mu.Lock()
	defer o.mu.Unlock()
	o.renewing = nil
	o.flights.Forget(renewalKey)
	switch {
	case err == nil:
		o.setLocked(got.tok)
		o.tokAsked = time.Time{}
		if got.sent != "" {
			o.tokAsked = r.started
		}
		o.id, o.key, o.ver, o.unsaved = got.id, got.key, got.ver, got.unsaved
		o.lost, o.retryAt = nil, time.Time{}
		o.backoff.Reset()
		switch got.sent {
		case "refresh":
			o.refreshes.Add(1)
		case "authorize":
			o.authorizations.Add(1)
		}
	case isUnavailable(err):
		var u *unavailableError
		errors.As(err, &u)
		pause := max(o.backoff.NextBackOff(), u.retryAfter)
		o.retryAt = time.Now().Add(pause)
		if r.reason == "refresh" {
			o.refreshFailures.Add(1)
		}
		o.env.Logger.Warn("authorization server or grant store unavailable", "step", r.reason, "retry_in", pause, "err", err)
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
			return err // a step-up refused: the token held still serves what it did
		}
		o.tok, o.lost = nil, err
		if r.reason == "refresh" && o.cfg.Authorize != nil && o.life.Err() == nil {
			// The grant is lost: calls fail at once, one authorization
			// starts in the background, later calls use its token.
			o.startLocked(append([]string{}, o.held...))
		}
	}
	return err
}

// renewed tells Env.OnRenewal of a renewal that ended, unless the Store
// held a token already and nothing was sent.
func (o *OAuth) renewed(r *renewal, got *obtained, err error) {
	if o.env.OnRenewal == nil || err == nil && got.sent == "" {
		return
	}
	kind := r.reason
	if err == nil {
		kind = got.sent
	}
	o.env.OnRenewal(kind == "refresh", err)
}

// obtained is what a renewal got: a token, and the identity it goes with.
type obtained struct {
	tok     *Token
	id      *identity
	key     Key    // the Store key tok and id belong to
	sent    string // "refresh", "authorize", or "" when the Store had it
	ver     int64  // the Store's version that holds tok, or the one read when unsaved
	unsaved bool   // tok could not be written: it is newer than the stored grant
}

// obtain gets a token for r: discovery first (once), then the renewal
// under the Store's lock for the key discovery gives.
func (o *OAuth) obtain(ctx context.Context, r *renewal) (*obtained, error) {
	d, err := o.discovered(ctx)
	if err != nil {
		return nil, err
	}
	k := o.storeKey(d)
	var got *obtained
	stored, err := o.cfg.Store.Update(ctx, k, func(ctx context.Context, cur Grant) (*Grant, error) {
		var next *Grant
		var err error
		got, next, err = o.renewWithProof(ctx, d, k, r, cur)
		if got != nil {
			got.ver = cur.Version
		}
		return next, err
	})
	if got != nil {
		got.key = k
	}
	switch {
	case got != nil && err != nil:
		// The token is good, the Store did not take it: use it here, and
		// renew from it next time, not from the stored one it replaced.
		o.env.Logger.Warn("the new token could not be stored", "err", err)
		got.unsaved = true
		return got, nil
	case got != nil:
		got.ver = stored.Version
		return got, nil
	case errors.Is(err, ErrStoreUnavailable) || errors.Is(err, ErrConflict):
		return nil, unavailable(err, 0)
	}
	return nil, err
}

// renew is r under the Store's lock, cur the grant stored. If another
// holder renewed past the token r replaces, its token is used and nothing
// is sent. Else the stored refresh token is spent, or the user (or the
// client's credentials) authorizes. It returns what it got and the grant
// to write.
func (o *OAuth) renew(ctx context.Context, d *discovery, k Key, r *renewal, cur Grant) (got *obtained, next *Grant, err error) {
	o.mu.Lock()
	var mine *Token
	if o.tok != nil {
		mine = Grant{Token: o.tok}.clone().Token
	}
	myVer, unsaved, myID := o.ver, o.unsaved, o.id
	// moved: the resource now sends its clients to another authorization
	// server (SEP-2352), or names itself otherwise. What this process
	// holds is the other grant's: its client is unknown here and its
	// refresh token must not be shown to this issuer.
	moved := o.key != k
	o.mu.Unlock()
	if moved {
		mine, myID = nil, nil
	}

	base := cur.Token
	dirty := false
	if mine != nil && (cur.Version == 0 || (unsaved && cur.Version == myVer)) {
		// The Store forgot the grant (a Redis restarted without
		// persistence) or never took this process's last token: this
		// process's is the newest there is.
		base, dirty = mine, true
	}
	id, reg, registered, err := o.identityFor(ctx, d, cur.Registration, myID)
	if err != nil {
		return nil, nil, err
	}
	dirty = dirty || registered
	keep := func() *Grant {
		if dirty {
			return &Grant{Registration: reg, Token: base}
		}
		return nil
	}

	now := time.Now()
	if base != nil && base.AccessToken != r.from && usable(base, now) && subset(r.scopes, base.Scopes) {
		return &obtained{tok: base, id: id}, keep(), nil
	}
	if base != nil && base.RefreshToken != "" && r.scopes == nil {
		tok, err := o.refresh(ctx, d, id, base.RefreshToken)
		if err == nil {
			t := toToken(tok, base.Scopes)
			return &obtained{tok: t, id: id, sent: "refresh"}, &Grant{Registration: reg, Token: t}, nil
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Reason != ReasonInvalidGrant {
			return nil, keep(), err
		}
		// Read again before clearing anything: a holder whose lock
		// lapsed under this one may have renewed.
		again, lerr := o.cfg.Store.Load(ctx, k)
		switch {
		case lerr != nil:
			return nil, keep(), err
		case again.Version != cur.Version && again.Token != nil && usable(again.Token, time.Now()):
			return &obtained{tok: again.Token, id: id}, nil, nil
		case again.Version != cur.Version:
			return nil, nil, err
		}
		return nil, &Grant{Registration: reg}, err
	}
	if r.reason == "refresh" && !moved {
		return nil, keep(), &Error{Reason: ReasonInvalidGrant, Err: errors.New("the stored grant has no refresh token")}
	}
	grant, err := o.grantFor(d)
	if err != nil {
		return nil, keep(), err
	}
	scopes := o.scopesFor(d, r.scopes, grant)
	var tok *oauth2.Token
	switch grant {
	case GrantClientCredentials:
		tok, err = o.clientCredentials(ctx, d, id, scopes)
	case GrantJWTBearer:
		tok, err = o.jwtBearer(ctx, d, id, scopes)
	default:
		tok, err = o.authorizationCode(ctx, d, id, scopes)
	}
	if err != nil {
		return nil, keep(), err
	}
	t := toToken(tok, scopes)
	return &obtained{tok: t, id: id, sent: "authorize"}, &Grant{Registration: reg, Token: t}, nil
}

// usable: t can be sent now.
func usable(t *Token, now time.Time) bool {
	return t.AccessToken != "" && (t.Expiry.IsZero() || now.Before(t.Expiry))
}

// toToken is x/oauth2's token as stored, with the scopes granted (the
// response's scope, else those asked).
func toToken(tok *oauth2.Token, asked []string) *Token {
	scopes := union(nil, asked)
	if granted := strings.Fields(fmt.Sprint(tok.Extra("scope"))); tok.Extra("scope") != nil && len(granted) > 0 {
		scopes = union(nil, granted)
	}
	return &Token{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Scopes: scopes}
}

// discovered finds the authorization server, once; a failure is tried
// again by the next renewal.
func (o *OAuth) discovered(ctx context.Context) (*discovery, error) {
	o.mu.Lock()
	d, ch := o.disc, o.challenge
	o.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d, err := discover(ctx, o.env.HTTPClient, o.endpoint, ch)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.disc = d
	o.mu.Unlock()
	return d, nil
}

// storeKey is where the grant for d lives: the issuer, the resource, and
// the client as configured (a dynamic registration is the Store's to
// remember, under the redirect URI it was made for).
func (o *OAuth) storeKey(d *discovery) Key {
	k := Key{Issuer: d.as.Issuer, Resource: d.resource}
	if k.Issuer == "" {
		k.Issuer = d.as.TokenEndpoint
	}
	switch {
	case o.cfg.ClientID != "":
		k.Client = o.cfg.ClientID
	case o.cfg.ClientMetadataURL != "" && d.as.ClientIDMetadataDocumentSupported:
		k.Client = o.cfg.ClientMetadataURL
	case o.cfg.Workload != nil:
		k.Client = "workload " + o.cfg.Workload.AssertionFile
	default:
		k.Client = "dynamic " + o.cfg.RedirectURI
	}
	return k
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

// setLocked makes t current and schedules its refresh: 10 % of its
// remaining lifetime before expiry, at most 5 min. A token without
// expires_in is used until a 401.
func (o *OAuth) setLocked(t *Token) {
	o.tok = Grant{Token: t}.clone().Token
	o.held = union(nil, t.Scopes)
	if !t.Expiry.IsZero() {
		ahead := min(time.Until(t.Expiry)/10, 5*time.Minute)
		o.refreshAt = t.Expiry.Add(-ahead)
	} else {
		o.refreshAt = time.Unix(1<<62, 0)
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
