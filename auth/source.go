package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Reasons an Error gives. The set grows with the OAuth flow.
const (
	ReasonNoToken       = "no_token"       // no token could be had
	ReasonTokenRejected = "token_rejected" // the server refused the token and the source had no other
)

// Error is a request that could not be authorized. It never contains a
// token.
type Error struct {
	Reason string
	Err    error // why, if the source said (its tokens are not in it)
}

// Error says why, never with a token.
func (e *Error) Error() string {
	if e.Err == nil {
		return "auth: " + e.Reason
	}
	return fmt.Sprintf("auth: %s: %v", e.Reason, e.Err)
}

// Unwrap is the source's own error, if it gave one.
func (e *Error) Unwrap() error { return e.Err }

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

	mu     sync.Mutex
	token  string
	flight *flight // the fetch under way, if any
}

type flight struct {
	done  chan struct{}
	token string
	err   error
}

// NewSource returns a Source that fetches with fetch.
func NewSource(fetch FetchFunc) *Source { return &Source{fetch: fetch} }

// Token returns the current token, fetching the first one.
func (s *Source) Token(ctx context.Context) (string, error) { return s.get(ctx, "") }

// Rejected reports that the server refused token and returns the token to
// use now. Fetching again the token just refused is an *Error with
// ReasonTokenRejected: sending it again would only be refused again.
func (s *Source) Rejected(ctx context.Context, token string) (string, error) {
	return s.get(ctx, token)
}

func (s *Source) get(ctx context.Context, rejected string) (string, error) {
	for {
		s.mu.Lock()
		if s.token != "" && s.token != rejected {
			t := s.token
			s.mu.Unlock()
			return t, nil
		}
		f, lead := s.flight, false
		if f == nil {
			f, lead = &flight{done: make(chan struct{})}, true
			s.flight = f
		}
		s.mu.Unlock()
		if lead {
			// The first caller fetches, under its own context; the others
			// wait within theirs, and try again themselves if it was only
			// the leader's context that ended.
			f.token, f.err = s.fetch(ctx, rejected)
			if f.err == nil && (f.token == "" || f.token == rejected) {
				f.err = &Error{Reason: ReasonTokenRejected}
				if f.token == "" {
					f.err = &Error{Reason: ReasonNoToken}
				}
			}
			s.mu.Lock()
			if f.err == nil {
				s.token = f.token
			}
			s.flight = nil
			s.mu.Unlock()
			close(f.done)
		} else {
			select {
			case <-f.done:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		switch {
		case f.err == nil:
			return f.token, nil
		case !lead && ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)):
			continue // the leader gave up, not the source
		}
		var ae *Error
		if errors.As(f.err, &ae) {
			return "", f.err
		}
		reason := ReasonNoToken
		if rejected != "" {
			reason = ReasonTokenRejected
		}
		return "", &Error{Reason: reason, Err: f.err}
	}
}
