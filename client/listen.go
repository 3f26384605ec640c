package client

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// errListenSessionEra is Listen's answer in the session era, mcp-go's own.
var errListenSessionEra = fmt.Errorf(
	"subscriptions/listen requires protocol version %s or later; "+
		"on this connection notifications are delivered without opting in",
	mcp.ProtocolVersion20260728)

// listenSet is what callers of Listen and ListenAsync asked to listen for,
// while they listen. Every stateless-era session listens for the union of
// it and the client's own filter (see subscriptionFilter), on one stream:
// mcp-go keeps one subscriptions/listen stream per session, and a second
// Listen on it would end the first.
type listenSet struct {
	mu      sync.Mutex // inside session.listenMu; nothing is locked under it
	next    int
	filters map[int]mcp.SubscriptionFilter
}

func (l *listenSet) add(f mcp.SubscriptionFilter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.filters == nil {
		l.filters = map[int]mcp.SubscriptionFilter{}
	}
	l.next++
	l.filters[l.next] = f
	return l.next
}

func (l *listenSet) remove(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.filters, id)
}

// union returns f widened by every filter in the set.
func (l *listenSet) union(f mcp.SubscriptionFilter) mcp.SubscriptionFilter {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, g := range l.filters {
		f.ToolsListChanged = f.ToolsListChanged || g.ToolsListChanged
		f.PromptsListChanged = f.PromptsListChanged || g.PromptsListChanged
		f.ResourcesListChanged = f.ResourcesListChanged || g.ResourcesListChanged
		for _, uri := range g.ResourceSubscriptions {
			if !slices.Contains(f.ResourceSubscriptions, uri) {
				f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
			}
		}
	}
	return f
}

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
	stop, err := c.listen(ctx, filter)
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
	end, err := c.listen(ctx, filter)
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

// listen adds filter to what the sessions listen for, once a session (the
// first call opens one) shows the stateless era. end takes it out again.
func (c *ResilientClient) listen(ctx context.Context, filter mcp.SubscriptionFilter) (end func(), err error) {
	// Added first, so that a session opened meanwhile listens for it too.
	id := c.listens.add(filter)
	err = c.do(ctx, string(mcp.MethodSubscriptionsListen), "", func(_ context.Context, s *session) error {
		if s.sessionEra {
			return errListenSessionEra
		}
		return nil
	})
	if err != nil {
		c.listens.remove(id)
		return nil, err
	}
	c.relistenAll()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.listens.remove(id)
			c.relistenAll()
		})
	}, nil
}

// relistenAll restarts the stream of every session in service with the
// current filter.
func (c *ResilientClient) relistenAll() {
	for _, s := range c.sess.pool.Values() {
		c.relisten(s)
	}
}
