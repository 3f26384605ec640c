package sse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// Handshake is what opening a session asks of the client, given for each
// open: this package knows nothing of the client's sessions.
type Handshake struct {
	Endpoint string // the stream's URL
	// Transport is the transport's configuration, its URL left to Open
	// (Endpoint's).
	Transport      Config
	Options        []mcpclient.ClientOption      // mcp-go's client options, the caller's
	OnNotification func(mcp.JSONRPCNotification) // every notification of the session's
	Retryable      []int                         // WithRetryableRPCCodes': an initialize failed with one is tried again
	// Failed is the error of a failed initialize (err), with its verdict:
	// the client's own, which the client's breaker reads back.
	Failed func(v policy.Verdict, err error) error
	// Unavailable and AuthorizationRequired are the client's errors for
	// an endpoint event naming another origin, and for a stream refused
	// with 401 or 403.
	Unavailable, AuthorizationRequired error
}

// Session is a session initialized on a stream, not yet attached
// (Attach) to the client's session made of it.
type Session struct {
	Client    *mcpclient.Client
	Result    *mcp.InitializeResult
	transport *Transport
}

// Open opens a session of the HTTP+SSE transport: the stream, its
// endpoint, and initialize on it. The counterpart of the client's open of
// a Streamable HTTP session and of a stdio process's.
func Open(ctx context.Context, req *mcp.InitializeRequest, h Handshake) (*Session, error) {
	u, err := url.Parse(h.Endpoint)
	if err != nil {
		return nil, backoff.Permanent(err)
	}
	cfg := h.Transport
	cfg.URL = u
	tr := New(cfg)
	// The 2024-11-05 handshake, initialize, without the server/discover of
	// the stateless era, which an HTTP+SSE server cannot speak. It goes
	// before the caller's client options, so that a protocol version the
	// caller pinned still wins.
	opts := append([]mcpclient.ClientOption{mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}, h.Options...)
	mc := mcpclient.NewClient(tr, opts...)
	if err := mc.Start(ctx); err != nil {
		_ = mc.Close()
		return nil, h.startError(err)
	}
	mc.OnNotification(h.OnNotification)
	res, err := mc.Initialize(ctx, *req)
	if err != nil {
		_ = mc.Close()
		v := policy.Classify(err, policy.Session{}, nil, ctx.Err() != nil)
		err = h.Failed(v, fmt.Errorf("initialize: %w", err))
		if policy.DialEnds(v, h.Retryable) {
			return nil, backoff.Permanent(err)
		}
		return nil, err
	}
	return &Session{Client: mc, Result: res, transport: tr}, nil
}

// Attach tells lost of the loss of the session's stream from now on. An
// error is why the stream was lost already: the caller closes the
// session.
func (s *Session) Attach(lost func(cause error)) error {
	s.transport.SetLostHandler(lost)
	return s.transport.Lost()
}

// startError is what a stream that could not be opened, or named no
// usable endpoint, means for the dial: an endpoint on another origin or
// an endpoint that is not HTTP+SSE ends it (the call fails at once);
// anything else is tried again on the backoff schedule.
func (h *Handshake) startError(err error) error {
	var foreign *EndpointError
	var notStream *NotEventStreamError
	var status *StatusError
	switch {
	case errors.As(err, &foreign):
		return backoff.Permanent(fmt.Errorf("%w: %w", h.Unavailable, err))
	case errors.As(err, &notStream):
		return backoff.Permanent(err)
	case errors.As(err, &status):
		switch {
		case status.Status == http.StatusUnauthorized, status.Status == http.StatusForbidden:
			return backoff.Permanent(fmt.Errorf("%w: %w", h.AuthorizationRequired, err))
		case status.Status == http.StatusRequestTimeout, status.Status == http.StatusTooManyRequests:
		case status.Status >= 400 && status.Status < 500:
			return backoff.Permanent(err)
		}
	}
	return err
}
