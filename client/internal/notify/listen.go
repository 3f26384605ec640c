package notify

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// ErrListenSessionEra is Listen's answer in the session era, mcp-go's own.
var ErrListenSessionEra = fmt.Errorf(
	"subscriptions/listen requires protocol version %s or later; "+
		"on this connection notifications are delivered without opting in",
	mcp.ProtocolVersion20260728)

// listenSet is what callers of Listen and ListenAsync asked to listen for,
// while they listen. Every stateless-era session listens for the union of
// it and the client's own filter (see SubscriptionFilter), on one stream:
// mcp-go keeps one subscriptions/listen stream per session, and a second
// Listen on it would end the first. It is part of the memory, and guarded
// by its mu (one lock for both, for the size of the client:
// TestClientSizeClass): its methods are called with memory.mu held.
type listenSet struct {
	next    int
	filters map[int]mcp.SubscriptionFilter
}

func (l *listenSet) add(f mcp.SubscriptionFilter) int {
	if l.filters == nil {
		l.filters = map[int]mcp.SubscriptionFilter{}
	}
	l.next++
	l.filters[l.next] = f
	return l.next
}

func (l *listenSet) remove(id int) {
	delete(l.filters, id)
}

// any reports whether anyone listens.
func (l *listenSet) any() bool {
	return len(l.filters) > 0
}

// union returns f widened by every filter in the set.
func (l *listenSet) union(f mcp.SubscriptionFilter) mcp.SubscriptionFilter {
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

// Listen adds filter to what the sessions listen for, once a session (the
// first call opens one) shows the stateless era. end takes it out again.
// It is the client's Listen and ListenAsync.
func (m *Messages) Listen(ctx context.Context, filter mcp.SubscriptionFilter) (end func(), err error) {
	// Added first, so that a session opened meanwhile listens for it too.
	id := m.mem().listen(filter)
	err = m.host.Do(ctx, string(mcp.MethodSubscriptionsListen), func(s Session) error {
		if s.SessionEra() {
			return ErrListenSessionEra
		}
		return nil
	})
	if err != nil {
		m.mem().unlisten(id)
		return nil, err
	}
	m.relistenAll()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mem().unlisten(id)
			m.relistenAll()
		})
	}, nil
}

// relistenAll restarts the stream of every session in service with the
// current filter.
func (m *Messages) relistenAll() {
	m.host.EachSession(m.Relisten)
}
