package auth

import (
	"context"
	"errors"
	"sync"
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
func (s *Source) Rejected(ctx context.Context, token string, _ Challenge) (string, error) {
	return s.get(ctx, token)
}

// InsufficientScope passes a 403 on: a token obtained elsewhere has the
// scope it has.
func (s *Source) InsufficientScope(context.Context, string, Challenge) (string, error) {
	return "", nil
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
