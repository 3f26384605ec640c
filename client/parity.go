package client

import (
	"context"
	"sync/atomic"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The methods in this file, iter.go, tasks.go and messages.go (Listen) mirror those of
// mcp-go's *client.Client that MCPClient lacks, with the same signatures, so
// that code written against the concrete type compiles after the swap. Each
// answers for the client as a whole, across re-initializations: where
// mcp-go's reads its one connection, these read the session in service.
// Start and GetTransport have no meaning for a pool of sessions that open
// and close on their own, and are left out.

// parity is what those methods need to know of the sessions beyond what
// the pool holds.
type parity struct {
	last    atomic.Pointer[session] // the session that went into service last
	serials atomic.Uint64           // sessions put into service in place of lost ones so far
}

// OnConnectionLost registers a handler told of every session the client
// loses, once per loss, with the cause (the failed probe, the 404 of a
// restarted server, the connection that broke), before the client has
// recovered: handlers are called in order with WithStateHandler's
// transitions, on the same goroutine of the client's, after the transition
// away from Ready and before the one back. They may call the client. A
// session the caller replaced by calling Initialize with another request,
// and the sessions Close ends, are not losses.
//
// Unlike mcp-go's, which keeps the last handler given and which its
// Streamable HTTP transport never calls, every handler registered is called.
func (c *ResilientClient) OnConnectionLost(handler func(error)) {
	if handler != nil {
		c.sess.notifier.OnLost(handler)
	}
}

// GetServerCapabilities returns the capabilities the server declared when
// the session in service was opened. They are read again on every
// re-initialization, since a restarted server may declare others; while a
// reconnect is under way the last session's are returned, and the zero value
// before the first session.
func (c *ResilientClient) GetServerCapabilities() mcp.ServerCapabilities {
	if s := c.sess.current(); s != nil {
		return s.result.Capabilities
	}
	return mcp.ServerCapabilities{}
}

// GetClientCapabilities returns the capabilities the client declared when
// the session in service was opened: those of WithClientOptions
// (mcpclient.WithClientCapabilities) merged with the Initialize request's.
// Handlers given through WithClientOptions add capabilities that mcp-go
// declares without recording them here, as its own client does. The zero
// value before the first session.
func (c *ResilientClient) GetClientCapabilities() mcp.ClientCapabilities {
	if s := c.sess.current(); s != nil {
		return s.mc.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// IsInitialized reports whether the client has opened a session (by
// Initialize or by its first call) and is not closed. It stays true across
// re-initializations, which the client makes on its own: a call made while
// one is under way waits for it.
func (c *ResilientClient) IsInitialized() bool {
	return c.parity.last.Load() != nil && !c.closed.Load()
}

// GetSessionId returns the Mcp-Session-Id of the session in service. It
// changes with every re-initialization, and is "" while a reconnect is under
// way (the last session's id is no longer valid anywhere), before the first
// session, and in the stateless era (2026-07-28), which has no sessions.
func (c *ResilientClient) GetSessionId() string {
	if vs := c.sess.pool.Values(); len(vs) > 0 {
		return vs[0].mc.GetSessionId()
	}
	return ""
}

// Discover asks the server which protocol versions it supports, what it can
// do and who it is (server/discover, 2026-07-28). A server of the session era
// answers it with an error of its own, returned as is. Safe to repeat, so it
// is sent again after any failure that a retry can fix.
func (c *ResilientClient) Discover(ctx context.Context, req mcp.DiscoverRequest) (*mcp.DiscoverResult, error) {
	return mcpCall(ctx, c, mcp.MethodServerDiscover, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.DiscoverResult, error) {
		return mc.Discover(ctx, req)
	})
}

// RootListChanges tells the server that the client's roots changed
// (notifications/roots/list_changed), so that it asks for them again. With
// WithPoolSize(n > 1), every session in service is told: the one the call
// goes through as any call does, the others as best they can be. In the
// stateless era (2026-07-28) nothing is sent: there is no session to tell,
// the server asks for the roots within each request that needs them, and a
// server of that era refuses the notification as mcp-go sends it.
func (c *ResilientClient) RootListChanges(ctx context.Context) error {
	var sent *session
	err := c.do(ctx, mcp.MethodNotificationRootsListChanged, "", func(ctx context.Context, s *session) error {
		sent = s
		if !s.sessionEra {
			return nil
		}
		return s.mc.RootListChanges(ctx)
	})
	if err != nil {
		return err
	}
	for _, s := range c.sess.pool.Values() {
		if s != sent && s.sessionEra {
			_ = s.mc.RootListChanges(ctx)
		}
	}
	return nil
}

// PendingSubscriptionFilter returns the filter the client's
// subscriptions/listen streams use in the stateless era: the resources
// subscribed to with Subscribe, the notifications asked for with Listen and
// ListenAsync, and the list changes the OnNotification handlers may want.
// Unlike mcp-go's client, which waits for a call to Listen to use it, this
// client listens with it as soon as it changes.
func (c *ResilientClient) PendingSubscriptionFilter() mcp.SubscriptionFilter {
	return c.messages.SubscriptionFilter()
}
