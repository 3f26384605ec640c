package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/sse"
)

// NewSSE returns a client for an MCP server that speaks the HTTP+SSE
// transport of protocol revision 2024-11-05 (deprecated in 2025-03-26):
// streamURL is the URL of its event stream, often ending in /sse. Like New
// it validates and does no I/O: the stream is opened by the first call (or
// Initialize).
//
// It is the same ResilientClient as New's, with the same methods, options,
// errors, Stats, observer events, State and policy. The stream is the
// session: a stream that ends, is reset, or goes silent (a keepalive ping
// left unanswered within WithKeepAliveTimeout) is a lost session. A new
// stream is opened, its endpoint event awaited, the session initialized
// and its subscriptions and logging level restored; calls whose answers
// were due on the old stream are sent again if they are safe to repeat,
// and end with ErrOutcomeUnknown otherwise; nothing more is POSTed to the
// old endpoint. A POST answered 404, or 400 on a session that has served
// (a restarted server that no longer knows it), is an expired session: one
// new session for every goroutine, and the call sent again. A POST refused
// before it was read (connection refused, 503, 429) did not run, as over
// Streamable HTTP.
//
// The endpoint event must name the stream's origin (scheme, host and
// port): one that names another is refused, logged, and the call fails
// with ErrUnavailable, so that a hostile server cannot send the client's
// calls and credentials elsewhere. Request ids are unique beyond the
// session (a random prefix per session): a gateway that sends every
// client's answers to every stream cannot hand this client another's; an
// answer to an id it did not send is dropped and counted
// (Stats().WrongAnswers). An answer larger than WithMaxResponseBytes is
// read no further: its call fails with ErrResponseTooLarge (with
// ErrOutcomeUnknown: it ran), never sent again, if its id came before the
// limit; else the stream is dropped and the session with it.
//
// Every HTTP option applies as for New: the GET and the POSTs go through
// the same HTTP client, token, headers, cookies and observers. The options
// of NewStdio are refused. See docs/sse.md.
func NewSSE(streamURL string, opts ...Option) (*ResilientClient, error) {
	c, err := New(streamURL, opts...)
	if err != nil {
		return nil, err
	}
	c.sess.spoken.Store(speaksSSE)
	return c, nil
}

// What the endpoint was found to speak (ResilientClient.spoken).
const (
	speaksStateless int32 = iota
	speaksSessionEra
	speaksSSE
)

// WithSSEFallback makes a client of New fall back to the HTTP+SSE
// transport of protocol 2024-11-05 when the endpoint turns out to speak
// only that: the specification's backwards-compatibility procedure. When
// initialize POSTed to the URL is answered 400, 404 or 405 (mcp-go's
// ErrLegacySSEServer), a GET of the same URL is opened expecting an
// endpoint event; if one comes, the client speaks HTTP+SSE to it from then
// on, as a client of NewSSE does, and logs it. Default off: New's endpoint
// is a Streamable HTTP one, and such an answer is a clear error at once
// (F12). See docs/sse.md for why it is not the default.
func WithSSEFallback() Option {
	return optionFunc(func(o *options) { o.sseFallback = true })
}

// openFallingBack is open, and, with WithSSEFallback, an HTTP+SSE session
// in place of a Streamable HTTP one the endpoint refused as a legacy
// server would.
func (ss *sessions) openFallingBack(ctx context.Context) (*session, error) {
	s, err := ss.open(ctx)
	if err == nil || !ss.c.opts.sseFallback || !errors.Is(err, transport.ErrLegacySSEServer) {
		return s, err
	}
	s, sseErr := ss.openSSE(ctx, ss.initRequest())
	if sseErr != nil {
		ss.c.log.Info("initialize was answered as a legacy server would, and no HTTP+SSE stream either", "endpoint", ss.c.endpoint, "err", sseErr)
		return nil, err
	}
	ss.c.log.Info("the endpoint speaks HTTP+SSE (2024-11-05): the client uses it from now on", "endpoint", ss.c.endpoint)
	ss.spoken.Store(speaksSSE)
	return s, nil
}

// openSSE opens a session of the HTTP+SSE transport: the stream, its
// endpoint, and initialize on it. The counterpart of open and openStdio.
func (ss *sessions) openSSE(ctx context.Context, req *mcp.InitializeRequest) (*session, error) {
	u, err := url.Parse(ss.c.endpoint)
	if err != nil {
		return nil, backoff.Permanent(err)
	}
	hc := ss.c.httpClient
	if own := ss.sessionHTTPClient(); own != nil {
		hc = own // its cookie jar, as a Streamable HTTP session has
	}
	tr := sse.New(sse.Config{
		URL: u, Client: hc, Headers: ss.c.opts.headers, HeaderFunc: ss.c.opts.headerFunc,
		Limit: ss.c.opts.maxResponseBytes, Log: ss.c.log, Unmatched: &ss.c.stats.WrongAnswers,
	})
	// The 2024-11-05 handshake, initialize, without the server/discover of
	// the stateless era, which an HTTP+SSE server cannot speak.
	opts := append([]mcpclient.ClientOption{sessionEraOnly}, ss.c.opts.clientOptions...)
	mc := mcpclient.NewClient(tr, opts...)
	if err := mc.Start(ctx); err != nil {
		_ = mc.Close()
		return nil, sseStartError(err)
	}
	mc.OnNotification(ss.c.messages.Handle)
	res, err := mc.Initialize(ctx, *req)
	if err != nil {
		_ = mc.Close()
		v := policy.Classify(err, policy.Session{}, nil, ctx.Err() != nil)
		err = &openError{verdict: v, err: fmt.Errorf("initialize: %w", err)}
		if policy.DialEnds(v, ss.c.opts.retryableRPC) {
			return nil, backoff.Permanent(err)
		}
		return nil, err
	}
	ss.c.stats.SessionsOpened.Add(1)
	version := mc.ProtocolVersion()
	s := &session{mc: mc, sessionEra: !mcp.IsModernProtocol(version), version: version, result: res, request: req, opened: time.Now()}
	// Notifications come on the session's stream, always.
	s.streams.SetListening(true)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	tr.SetLostHandler(func(cause error) { ss.replace(s, cause) })
	if lost := tr.Lost(); lost != nil {
		s.close()
		return nil, lost
	}
	return s, nil
}

// sseStartError is what a stream that could not be opened, or named no
// usable endpoint, means for the dial: an endpoint on another origin or
// an endpoint that is not HTTP+SSE ends it (the call fails at once);
// anything else is tried again on the backoff schedule.
func sseStartError(err error) error {
	var foreign *sse.EndpointError
	var notStream *sse.NotEventStreamError
	var status *sse.StatusError
	switch {
	case errors.As(err, &foreign):
		return backoff.Permanent(fmt.Errorf("%w: %w", ErrUnavailable, err))
	case errors.As(err, &notStream):
		return backoff.Permanent(err)
	case errors.As(err, &status):
		switch {
		case status.Status == http.StatusUnauthorized, status.Status == http.StatusForbidden:
			return backoff.Permanent(fmt.Errorf("%w: %w", ErrAuthorizationRequired, err))
		case status.Status == http.StatusRequestTimeout, status.Status == http.StatusTooManyRequests:
		case status.Status >= 400 && status.Status < 500:
			return backoff.Permanent(err)
		}
	}
	return err
}
