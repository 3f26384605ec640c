package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
)

// Chain is the HTTP path of every request a client of New sends, as one
// ordered list: Build joins the layers in this order, outermost first, and
// nothing else adds one.
//
//  1. tracker and guard (Tracker): records each request's outcome in the
//     exchange of its call, guards its answer (guard.go), and strips the
//     credentials of a redirect that leaves the origin. Outermost: the
//     redirect check must not see the token, which the token layer adds
//     beneath it for its own origin only.
//  2. token (Token, auth.Transport): the bearer or OAuth token, and the
//     resend after a 401 or a step-up.
//  3. credentials (Credentials): notes the Authorization each request goes
//     out with, the token's included, whoever set it: the listing cache
//     asks it whose a private answer is (Current).
//  4. observers (Observer): the _meta the observers' propagators carry,
//     and the HTTP version of each answer. Beneath the token, so that a
//     resend after a 401 is an attempt of its own.
//  5. resend (NoResend): a transport of the caller's must not send a
//     request again by itself; the client's own (Renewable) sees to it
//     itself.
//  6. transport (Transport): the caller's (WithHTTPClient), the caller's
//     wrapper over the client's own (WithTransportWrapper), or the
//     client's own, renewed when it goes idle.
//
// A Chain's fields are set before Build; the chain it builds is safe for
// concurrent use.
type Chain struct {
	// Token makes the token layer over next (which also carries the
	// authorization server's requests); nil: no token.
	Token func(next http.RoundTripper) http.RoundTripper
	// Credentials, if set, is the credentials layer's record.
	Credentials *Credentials
	// Observer, if set, is the observers' layer's hook.
	Observer Observer
	// Transport sends the requests; nil: http.DefaultTransport. Own: it
	// is the client's own (a Renewable, or the caller's wrapper over
	// one), which never sends a request again by itself.
	Transport http.RoundTripper
	Own       bool
	// For the guard: WithMaxResponseBytes (0: the default), the log of
	// refused answers, and their count. Zero values: no log, no count.
	Limit        int64
	Log          *slog.Logger
	WrongAnswers *atomic.Uint64
}

// Build joins the layers, from the transport up, and returns the top
// one, the Tracker, which an http.Client is given as its Transport.
func (ch Chain) Build() *Tracker {
	next := ch.Transport // 6. transport
	if next == nil {
		next = http.DefaultTransport
	}
	t := &Tracker{Limit: ch.Limit, Log: ch.Log, WrongAnswers: ch.WrongAnswers}
	switch next.(type) {
	case *http.Transport, *Renewable:
		// It reports through httptrace the connection it takes, so that
		// no GotConn proves a request never left (Record.Traced).
		t.traced = true
	}
	if !ch.Own {
		next = NoResend{Next: next} // 5. resend
	}
	if ch.Observer != nil {
		next = &observed{next: next, hook: ch.Observer} // 4. observers
	}
	if ch.Credentials != nil {
		next = &credentialLayer{next: next, c: ch.Credentials} // 3. credentials
	}
	if ch.Token != nil {
		next = ch.Token(next) // 2. token
	}
	t.next = next // 1. tracker and guard
	return t
}

// Observer is the observers' hook on the requests of calls.
type Observer interface {
	// Outgoing is told of a request on its way out. It returns the
	// request to send (req, or a copy carrying the observers' _meta:
	// WithBody), and what to tell of the answer; nil for a request
	// outside any call, which is sent untouched.
	Outgoing(req *http.Request) (*http.Request, Answered)
}

// Answered is told the HTTP version of the answer to a request.
type Answered interface{ SawResponse(major, minor int) }

// observed is the observers' layer (4).
type observed struct {
	next http.RoundTripper
	hook Observer
}

func (t *observed) RoundTrip(req *http.Request) (*http.Response, error) {
	out, answered := t.hook.Outgoing(req)
	if answered == nil {
		return t.next.RoundTrip(out)
	}
	resp, err := t.next.RoundTrip(out)
	if err == nil {
		answered.SawResponse(resp.ProtoMajor, resp.ProtoMinor)
	}
	return resp, err
}

func (t *observed) CloseIdleConnections() { closeIdle(t.next) }

// Credentials follows the credential the client sends (the Authorization
// header of its requests, whoever sets it: WithBearerToken, WithOAuth,
// WithHeaders, WithHeaderFunc), as a fingerprint. Safe for concurrent use;
// its zero value is ready.
type Credentials struct {
	last atomic.Pointer[credential]
}

type credential struct{ header, fingerprint string }

// Current is the fingerprint of the credential last sent, "" for none.
func (c *Credentials) Current() string {
	if l := c.last.Load(); l != nil {
		return l.fingerprint
	}
	return ""
}

// saw records the Authorization header a request went out with.
func (c *Credentials) saw(h string) {
	if last := c.last.Load(); last != nil && last.header == h {
		return
	}
	fp := ""
	if h != "" {
		sum := sha256.Sum256([]byte(h))
		fp = hex.EncodeToString(sum[:16])
	}
	c.last.Store(&credential{header: h, fingerprint: fp})
}

// credentialLayer is the credentials layer (3).
type credentialLayer struct {
	next http.RoundTripper
	c    *Credentials
}

func (l *credentialLayer) RoundTrip(req *http.Request) (*http.Response, error) {
	l.c.saw(req.Header.Get("Authorization"))
	return l.next.RoundTrip(req)
}

func (l *credentialLayer) CloseIdleConnections() { closeIdle(l.next) }

// closeIdle passes CloseIdleConnections on to rt, if it has it.
func closeIdle(rt http.RoundTripper) {
	if ci, ok := rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// RequestBody is a copy of req's body, read through GetBody (mcp-go's are
// in memory); nil if it cannot be had.
func RequestBody(req *http.Request) []byte {
	if req.GetBody == nil {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		return nil
	}
	return body
}

// WithBody returns a copy of req that sends body instead of its own.
func WithBody(req *http.Request, body []byte) *http.Request {
	if req.Body != nil {
		req.Body.Close() // a RoundTripper closes the body it was given, even one it replaces
	}
	r := new(http.Request)
	*r = *req
	r.Body = io.NopCloser(bytes.NewReader(body)) // in memory: net/http writes it with the headers
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return r
}
