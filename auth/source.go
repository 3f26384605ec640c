package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"
)

// FetchFunc returns a token. rejected is "" for the first token, else the
// token the server just refused.
type FetchFunc func(ctx context.Context, rejected string) (string, error)

// Source is the token every request of one client carries. It fetches the
// first token, and a replacement for a rejected one, once for every caller
// that asks while that fetch is under way; a caller that reports a token
// already replaced gets the replacement at once, without a fetch.
//
// A Source is safe for concurrent use.
type Source struct {
	fetch FetchFunc

	// Lock order: mu is never held while fetching or waiting; fetches
	// are grouped in flights by the token they replace.
	mu      sync.Mutex
	token   string // guarded by mu
	flights singleflight.Group
}

// NewSource returns a Source that fetches with fetch.
func NewSource(fetch FetchFunc) *Source { return &Source{fetch: fetch} }

// Token returns the current token, fetching the first one.
func (s *Source) Token(ctx context.Context) (string, error) { return s.get(ctx, "") }

// Rejected reports that the server refused token and returns the token to
// use now. Fetching again the token just refused is an *Error with
// ReasonTokenRejected: sending it again would only be refused again.
func (s *Source) Rejected(ctx context.Context, token string, _ Challenge) (string, error) {
	return s.get(ctx, token)
}

// InsufficientScope passes a 403 on: a token obtained elsewhere has the
// scope it has.
func (s *Source) InsufficientScope(context.Context, string, Challenge) (string, error) {
	return "", nil
}

// maxFetches bounds how often one caller starts or joins a fetch: a fetch
// ended by its starter's context is tried again by the others.
const maxFetches = 8

func (s *Source) get(ctx context.Context, rejected string) (string, error) {
	for range maxFetches {
		if t := s.current(rejected); t != "" {
			return t, nil
		}
		// The first caller's fetch runs under its context; the others
		// wait within theirs, and try again if it was only the first
		// caller's context that ended.
		c := s.flights.DoChan(rejected, func() (any, error) { return s.fetchFor(ctx, rejected) })
		var res singleflight.Result
		select {
		case res = <-c:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if res.Err == nil {
			return res.Val.(string), nil
		}
		if ctx.Err() == nil && (errors.Is(res.Err, context.Canceled) || errors.Is(res.Err, context.DeadlineExceeded)) {
			continue // the first caller gave up, not the source
		}
		var ae *Error
		if errors.As(res.Err, &ae) {
			return "", res.Err
		}
		reason := ReasonNoToken
		if rejected != "" {
			reason = ReasonTokenRejected
		}
		return "", &Error{Reason: reason, Err: res.Err}
	}
	return "", fmt.Errorf("%w: every fetch ended with its caller's context", ErrUnavailable)
}

// current is the token to use instead of rejected, "" if none yet.
func (s *Source) current(rejected string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != rejected {
		return s.token
	}
	return ""
}

// fetchFor is one flight: a fetch, unless the flight before it (for the
// same rejected token) replaced it already.
func (s *Source) fetchFor(ctx context.Context, rejected string) (any, error) {
	if t := s.current(rejected); t != "" {
		return t, nil
	}
	t, err := s.fetch(ctx, rejected)
	switch {
	case err != nil:
		return nil, err
	case t == "":
		return nil, &Error{Reason: ReasonNoToken}
	case t == rejected:
		return nil, &Error{Reason: ReasonTokenRejected}
	}
	s.mu.Lock()
	s.token = t
	s.mu.Unlock()
	return t, nil
}
