package client

import (
	"context"
	"errors"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/notify"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// The server's messages outside calls are client/internal/notify's room
// (notify.Messages, the client's messages field): the notifications and
// their handlers, the event stream and the subscriptions/listen streams,
// what every new session is told again, the elicitation defaults, the
// client's side of progress. This file is what the room asks of the
// client (messagesHost) and of a session, and Listen.

// messagesHost is the client as its room of messages sees it
// (notify.Host): a view of the client, not a copy.
type messagesHost ResilientClient

func (h *messagesHost) client() *ResilientClient { return (*ResilientClient)(h) }

func (h *messagesHost) Config() notify.Config {
	c := h.client()
	return notify.Config{
		Log: c.log, Lifetime: c.lifetime, ProbeTimeout: c.opts.probeTimeout(),
		NewBackOff: c.opts.newBackOff, MaxResponseBytes: c.opts.maxResponseBytes,
		ClientOptions: len(c.opts.clientOptions) > 0,
		Endpoint:      c.endpoint, HTTPClient: c.httpClient, Headers: c.opts.headers, HeaderFunc: c.opts.headerFunc,
	}
}

func (h *messagesHost) EachSession(f func(notify.Session)) {
	for _, s := range h.client().sess.pool.Values() {
		f(s)
	}
}

func (h *messagesHost) Do(ctx context.Context, method string, send func(notify.Session) error) error {
	return h.client().do(ctx, method, "", func(_ context.Context, s *session) error { return send(s) })
}

func (h *messagesHost) Discard(s notify.Session, kind policy.Loss, err error) bool {
	return h.client().sess.pool.DiscardValue(s.(*session), &lostError{kind: kind, err: err})
}

func (h *messagesHost) Probe(ctx context.Context, s notify.Session) (policy.Verdict, bool, error) {
	err := h.client().sess.checkSession(ctx, s.(*session))
	if pe := (*probeError)(nil); errors.As(err, &pe) {
		return pe.verdict, true, err
	}
	return policy.Verdict{}, false, err
}

func (h *messagesHost) Notified(n mcp.JSONRPCNotification) { h.client().listings.Notified(n) }

func (h *messagesHost) ListingsListen() bool     { return h.client().listings.Listening() }
func (h *messagesHost) Background(f func()) bool { return h.client().goBackground(f) }

// A session as the room of messages sees it (notify.Session).

func (s *session) Streams() *notify.Streams        { return &s.streams }
func (s *session) Context() context.Context        { return s.ctx }
func (s *session) SessionEra() bool                { return s.sessionEra }
func (s *session) Member() int                     { return s.member }
func (s *session) Version() string                 { return s.version }
func (s *session) MCP() *mcpclient.Client          { return s.mc }
func (s *session) Policy() policy.Session          { return s.policy() }
func (s *session) LevelSet(level mcp.LoggingLevel) { s.levelSet(level) }

// Listen asks the server for the notifications filter names
// (subscriptions/listen, 2026-07-28) and keeps them coming until ctx ends:
// the stream is opened again after every reconnect and after the server
// ends it, so the handlers registered with OnNotification see no gap but
// the outage itself (the protocol does not send again the notifications sent
// while no stream was open). A refusal that no retry can fix (a server without
// subscriptions/listen, a filter it refuses, authorization refused) is
// logged and not asked again on that session until what is listened for
// changes, or a new session opens. Listen returns nil when ctx ends, and
// ErrClosed if the client is closed first.
//
// Every Listen, ListenAsync and Subscribe of the client shares one stream
// per session, listening for the union of their filters; a Listen that ends
// narrows it again. Unlike mcp-go's, a second Listen does not end the first.
//
// The first session decides the era: in the session era (up to 2025-11-25)
// Listen returns mcp-go's error at once, since notifications arrive there
// without opting in; errors opening that session are the error contract's.
func (c *ResilientClient) Listen(ctx context.Context, filter mcp.SubscriptionFilter) error {
	stop, err := c.messages.Listen(ctx, filter)
	if err != nil {
		return err
	}
	defer stop()
	select {
	case <-ctx.Done():
		return nil
	case <-c.lifetime.Done():
		return ErrClosed
	}
}

// ListenAsync is Listen in the background: it returns once a session has
// shown the stateless era, and stop ends the listening and waits for it to
// end. onError, which may be nil, is called with ErrClosed if the client is
// closed while listening; a stream the server or the network ends is
// opened again, not reported. Listening also ends when ctx does.
func (c *ResilientClient) ListenAsync(ctx context.Context, filter mcp.SubscriptionFilter, onError func(error)) (stop func(), err error) {
	end, err := c.messages.Listen(ctx, filter)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer end()
		select {
		case <-ctx.Done():
		case <-c.lifetime.Done():
			if onError != nil && ctx.Err() == nil {
				onError(ErrClosed)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}, nil
}
