package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/origin"
)

// Authorizer gives a Transport its tokens. Source and OAuth are the two.
type Authorizer interface {
	// Token is the token to send; "" sends the request without one.
	Token(ctx context.Context) (string, error)
	// Rejected: the server answered 401 to token ("" if none was sent).
	// It returns the token to send instead.
	Rejected(ctx context.Context, token string, ch Challenge) (string, error)
	// InsufficientScope: the server answered 403 insufficient_scope. It
	// returns a token with more scope, or "" to pass the 403 on.
	InsufficientScope(ctx context.Context, token string, ch Challenge) (string, error)
}

// maxAuthorizations bounds the step-ups of one request: a 403
// insufficient_scope to its third send (or a later one) ends it, so a
// request has at most two step-ups (the MCP spec's advice against
// authorization loops). A 401 gets a
// replacement unless the token refused was itself a 401's replacement,
// obtained after it (askedBefore); the sends of one request never pass
// maxAuthorizations+1.
const maxAuthorizations = 3

// Transport adds the Authorizer's token to every request for Origin: as
// a bearer token, or, for an OAuth token bound to a key (DPoP, RFC 9449),
// with the DPoP scheme and a proof made for that one send. A server's
// DPoP nonce challenge (401 use_dpop_nonce) gets the request sent again at
// once with the nonce; the nonce it sends on any answer is used next.
// When the server answers 401, it asks for another token (once for every
// request refused with the same token) and sends the request again: a 401
// means it did not run, so this is safe for any request. A 403
// insufficient_scope is a step-up: a token with more scope, then the
// request again, unless the request was already sent three times (see
// maxAuthorizations). A request for another origin (scheme, host and
// port) is sent without a token.
//
// A Transport is safe for concurrent use.
type Transport struct {
	Base   http.RoundTripper
	Source Authorizer
	Origin *url.URL
	// Resend, if set, is called before a request refused with status
	// (401, 403) is sent again with a new token (or, after a DPoP nonce
	// challenge, 401, with a new proof), with the request's context; the request goes out again under the context it returns
	// (an observer's, that counts the resend as an attempt of its own).
	Resend func(ctx context.Context, status int) context.Context
}

// RoundTrip sends req with the token if it is for Origin, and again with
// a replacement after a 401 or a step-up after a 403 insufficient_scope.
// It fails with an *Error when no token, or no replacement, can be had,
// and with an *InsufficientScopeError when no token has the scope.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !SameOrigin(req.URL, t.Origin) {
		return t.Base.RoundTrip(req)
	}
	ctx := req.Context()
	token, err := t.Source.Token(ctx)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resendable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	rejectedAfterRenewal := false
	var refusedAt time.Time // the first 401 of this request
	for sent := 1; ; sent++ {
		var resp *http.Response
		resp, req, err = t.send(req, token, sent > 1, resendable)
		if err != nil {
			return resp, err
		}
		var next string
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			if rejectedAfterRenewal && !t.askedBefore(token, refusedAt) {
				// Refused twice in a row, the second time with a token
				// just obtained: asking again would loop.
				resp.Body.Close()
				return nil, &Error{Reason: ReasonTokenRejected}
			}
			if !resendable {
				return resp, nil // cannot be sent again; the 401 is the answer
			}
			if !rejectedAfterRenewal {
				refusedAt = time.Now()
			}
			next, err = t.Source.Rejected(ctx, token, ParseChallenge(resp.Header))
			rejectedAfterRenewal = true
		case resp.StatusCode == http.StatusForbidden:
			ch := ParseChallenge(resp.Header)
			if ch.Error != "insufficient_scope" || !resendable {
				return resp, nil
			}
			if sent >= maxAuthorizations {
				resp.Body.Close()
				return nil, &InsufficientScopeError{Scopes: ch.Scopes, Err: fmt.Errorf("%d tokens refused for want of scope", sent)}
			}
			next, err = t.Source.InsufficientScope(ctx, token, ch)
			if err == nil && next == "" {
				return resp, nil
			}
			rejectedAfterRenewal = false
		default:
			return resp, nil
		}
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if sent >= maxAuthorizations+1 {
			return nil, &Error{Reason: ReasonTokenRejected, Err: fmt.Errorf("%d tokens refused", sent)}
		}
		token = next
		if t.Resend != nil {
			req = req.WithContext(t.Resend(req.Context(), resp.StatusCode))
		}
	}
}

// send sends req with token (its body again if it was sent before), and
// again at once, with a fresh proof and the new nonce, when the server
// answers with a DPoP nonce challenge: the request did not run. After
// maxNonceResends it is an ErrUnavailable. It returns the request as last
// sent: a resend's context is the Resend hook's.
func (t *Transport) send(req *http.Request, token string, again, resendable bool) (*http.Response, *http.Request, error) {
	nonce := ""
	for nonces := 0; ; nonces++ {
		send, err := t.authorized(req, token, nonce)
		if err != nil {
			closeBody(req)
			return nil, req, err
		}
		if again && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, req, err
			}
			send.Body = body
		}
		resp, err := t.Base.RoundTrip(send)
		if err != nil || !t.nonceChallenged(send, resp) || !resendable {
			return resp, req, err
		}
		resp.Body.Close()
		if nonces >= maxNonceResends {
			// Not a refusal of the token: the policy sends the request
			// again, paced, like any other that did not run.
			return nil, req, fmt.Errorf("%w: the server asked for a new DPoP nonce %d times in a row", ErrUnavailable, nonces+1)
		}
		nonce = resp.Header.Get("DPoP-Nonce") // this answer's: another, older, may have been kept after it
		again = true
		if t.Resend != nil {
			req = req.WithContext(t.Resend(req.Context(), resp.StatusCode))
		}
	}
}

// askedBefore reports whether token, refused after a 401 to this request
// at refusedAt, is known to have been obtained before that refusal: the
// OAuth source's token taken from the Store, or from a renewal that asked
// before it. Its refusal says nothing of the tokens obtained since, so it
// gets a replacement of its own (within the request's bound of sends):
// after the server drops every token it issued, another replica's token
// from just before is refused too. Any other Authorizer's replacement is
// taken as just obtained.
func (t *Transport) askedBefore(token string, refusedAt time.Time) bool {
	o, ok := t.Source.(*OAuth)
	return ok && !o.askedSince(token, refusedAt)
}

// CloseIdleConnections passes on to Base, so that the HTTP client's
// CloseIdleConnections still reaches the connections.
func (t *Transport) CloseIdleConnections() {
	if ci, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// withToken is req with the token's header: a shallow copy with its own
// header map (a RoundTripper must not change the request it was given), as
// x/oauth2's Transport does; req.Clone would copy much more per call.
func withToken(req *http.Request, token string) *http.Request {
	r := new(http.Request)
	*r = *req
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if token != "" {
		r.Header["Authorization"] = []string{"Bearer " + token}
	}
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// SameOrigin reports whether a and b have the same scheme, host and port
// (the port a scheme implies when none is given).
func SameOrigin(a, b *url.URL) bool { return origin.Same(a, b) }
