package client

import (
	"context"
	"errors"
	"log/slog"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/listings"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/streamable"
	"github.com/resilientmcp/resilientmcp/client/store"
)

// listingHost is the client as its cache of listings and tools sees it
// (listings.Host): a conversion of the client's pointer, so that the cache
// holds its client in an interface without an allocation.
type listingHost ResilientClient

var _ listings.Host = (*listingHost)(nil)

func (h *listingHost) c() *ResilientClient { return (*ResilientClient)(h) }

func (h *listingHost) Call(ctx context.Context, method string, body func(context.Context) error) error {
	return h.c().call(ctx, method, "", body)
}

func (h *listingHost) Run(ctx context.Context, method string, send func(context.Context, listings.Session) error) error {
	return h.c().run(ctx, method, "", func(ctx context.Context, s *session) error { return send(ctx, s.listed()) })
}

func (h *listingHost) ListTools(ctx context.Context, mc *mcpclient.Client, req mcp.ListToolsRequest, page bool) (*mcp.ListToolsResult, error) {
	if page {
		return streamable.ListToolsByPage(ctx, mc, req)
	}
	return streamable.ListTools(ctx, mc, req)
}

func (h *listingHost) Fresh(ctx context.Context) bool {
	o := callOptionsOf(ctx)
	return o != nil && (o.fresh || o.invalid != nil)
}

func (h *listingHost) StaleFailure(ctx context.Context, err error) policy.StaleFailure {
	return policy.StaleFailure{
		NotAnswered: errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown),
		Answered: errors.Is(err, ErrResponseTooLarge) || errors.Is(err, ErrAuthorizationRequired) ||
			errors.As(err, new(*InsufficientScopeError)) || serverAnswered(err),
		CallerCancelled: errors.Is(ctx.Err(), context.Canceled),
		Closed:          errors.Is(err, ErrClosed) || h.closed.Load(),
	}
}

// serverAnswered reports whether err ends a call whose last attempt the
// server answered with a JSON-RPC error: resent for a retryable code
// (WithRetryableRPCCodes) until the retries were spent, it is still the
// server's answer, never masked by a stale one.
func serverAnswered(err error) bool {
	ce := new(callError)
	return errors.As(err, &ce) && ce.answered
}

func (h *listingHost) ServedStale(ctx context.Context) {
	h.stats.StaleAnswers.Add(1)
	h.obs.FromCache(ctx, true)
}

func (h *listingHost) Principal() string { return h.credentials.Current() }

func (h *listingHost) Relisten() {
	for _, s := range h.sess.pool.Values() {
		if !s.sessionEra {
			h.c().messages.Relisten(s)
		}
	}
}

func (h *listingHost) ToolsChanged() {
	h.c().messages.Dispatch(mcp.JSONRPCNotification{
		JSONRPC:      mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged},
	})
}

func (h *listingHost) RetryToolCall(t mcp.Tool) bool { return h.opts.retryToolCall(t) }

// StartBackground is goBackground's accounting, for a goroutine the cache
// starts itself: Close sets closed, then takes backgroundMu once, then
// waits for background.
func (h *listingHost) StartBackground() error {
	h.backgroundMu.Lock()
	defer h.backgroundMu.Unlock()
	if h.closed.Load() {
		return ErrClosed
	}
	h.background.Add(1)
	return nil
}

func (h *listingHost) EndBackground() { h.background.Done() }

func (h *listingHost) Lifetime() (context.Context, time.Duration) {
	return h.lifetime, h.opts.callTimeout
}

func (h *listingHost) Off() bool                        { return h.opts.listingCacheOff }
func (h *listingHost) MaxStale(read bool) time.Duration { return h.opts.maxStaleFor(read) }
func (h *listingHost) Store() store.ListingStore        { return h.opts.listings.store }
func (h *listingHost) Endpoint() string                 { return h.endpoint }
func (h *listingHost) Log() *slog.Logger                { return h.log }
func (h *listingHost) Serials() uint64                  { return h.parity.serials.Load() }
func (h *listingHost) MaxAttempts() int                 { return h.opts.maxAttempts }
func (h *listingHost) GiveUp(method, why string) error {
	return &callError{kind: ErrUnavailable, method: method, why: why}
}

// listed is what the cache reads of s; the zero value for none.
func (s *session) listed() listings.Session {
	if s == nil {
		return listings.Session{}
	}
	ls := listings.Session{MC: s.mc, Version: s.version, Serial: s.serial}
	if s.result != nil {
		ls.Info = &s.result.ServerInfo
	}
	return ls
}
