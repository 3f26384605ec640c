package notify

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// memory is what the caller set up on its sessions and every new session
// must have again: a transparent re-initialization is only transparent if
// the new session is the old one in every way the caller can see.
type memory struct {
	mu      sync.Mutex // inside Streams.mu; nothing is locked under it
	subs    []string   // resource URIs subscribed to, in order
	level   mcp.LoggingLevel
	listens listenSet // what callers of Listen asked for (listen.go)
}

func (m *memory) subscribed(uri string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.Index(m.subs, uri)
	switch {
	case on && i < 0:
		m.subs = append(m.subs, uri)
	case !on && i >= 0:
		m.subs = slices.Delete(m.subs, i, i+1)
	}
}

func (m *memory) setLevel(level mcp.LoggingLevel) {
	m.mu.Lock()
	m.level = level
	m.mu.Unlock()
}

// snapshot, listening and listenUnion read a memory not made yet (nil)
// as empty.
func (m *memory) snapshot() ([]string, mcp.LoggingLevel) {
	if m == nil {
		return nil, ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.subs), m.level
}

// listen adds f to what callers of Listen listen for, under the id it
// returns; unlisten takes it out again.
func (m *memory) listen(f mcp.SubscriptionFilter) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listens.add(f)
}

func (m *memory) unlisten(id int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listens.remove(id)
}

// listening reports whether a caller of Listen listens.
func (m *memory) listening() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listens.any()
}

// listenUnion returns f widened by what callers of Listen listen for.
func (m *memory) listenUnion(f mcp.SubscriptionFilter) mcp.SubscriptionFilter {
	if m == nil {
		return f
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listens.union(f)
}

// WantsEventStream reports whether session-era sessions must keep the GET
// event stream open: someone listens for notifications, subscribed to
// something, or gave mcp-go client options, which may install handlers for
// server-initiated requests (sampling, roots, elicitation) that arrive on
// that stream. mcp-go's options are opaque, so which ones cannot be told.
func (m *Messages) WantsEventStream() bool {
	subs, _ := m.memory.Load().snapshot()
	return m.notifications.HasHandlers() || len(subs) > 0 || m.host.Config().ClientOptions
}

// Restore puts what the caller set up back on a new session, before it goes
// into service, so that a call sent again on it (a resend or a replay)
// finds it there.
func (m *Messages) Restore(ctx context.Context, s Session) error {
	subs, level := m.memory.Load().snapshot()
	if level != "" {
		// In the stateless era this only records the level, which every
		// request then carries.
		s.LevelSet(level)
		//lint:ignore SA1019 restoring what the caller set with SetLevel, which MCPClient has
		if err := s.MCP().SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: level}}); err != nil {
			return fmt.Errorf("restoring logging level %s: %w", level, err)
		}
	}
	for _, uri := range subs {
		// In the stateless era this only adds to the filter of the
		// subscriptions/listen stream started below.
		//lint:ignore SA1019 restoring what the caller set with Subscribe, which MCPClient has
		err := s.MCP().Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
		switch {
		case err == nil:
		case !policy.AnsweredByServer(err, s.Policy()):
			return fmt.Errorf("restoring subscription to %s: %w", uri, err)
		default:
			// The new server refuses it (the resource is gone, say):
			// retrying cannot help, and must not keep the session out.
			m.host.Config().Log.Warn("subscription not restored: the server refused it", "uri", uri, "err", err)
			m.mem().subscribed(uri, false)
		}
	}
	if len(subs) > 0 || level != "" {
		m.host.Config().Log.Info("session state restored", "member", s.Member(), "subscriptions", len(subs), "level", level)
	}
	m.Relisten(s)
	return nil
}

// SubscriptionFilter is what a stateless-era session listens for: the
// resources subscribed to, the list changes handlers may want, and what
// callers of Listen asked for.
func (m *Messages) SubscriptionFilter() mcp.SubscriptionFilter {
	mem := m.memory.Load()
	subs, _ := mem.snapshot()
	// The cache of listings hears of changes too, once it holds an answer
	// with a ttl (listings.Cache.Listening).
	listening := m.notifications.HasHandlers() || m.host.ListingsListen()
	return mem.listenUnion(mcp.SubscriptionFilter{
		ToolsListChanged:      listening,
		PromptsListChanged:    listening,
		ResourcesListChanged:  listening,
		ResourceSubscriptions: subs,
	})
}

// Relisten (re)starts the subscriptions/listen stream of a stateless-era
// session with the current filter. The stateless era has no GET stream:
// notifications arrive on this stream only, and only those asked for. The
// stream of the previous filter is ended, also when the new one is empty.
// What follows the end of a stream is the policy's (AfterStream): one the
// server or the network ends (a restart) is opened again after a pause;
// one refused for good (no subscriptions/listen, a filter the server
// refuses, authorization), or whose backoff schedule ended, is not asked
// for again on this session until the filter changes; one that finds the
// session expired (the server changed protocol version, say) or answering
// another request takes the session out of service, and its replacement
// listens again.
func (m *Messages) Relisten(s Session) {
	if s.SessionEra() {
		m.listenLate(s)
		return
	}
	st := s.Streams()
	// Under the lock, so that the last filter computed is the one that
	// listens, however relistens interleave.
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stop != nil {
		st.stop()
		st.stop = nil
	}
	filter := m.SubscriptionFilter()
	gen := st.gen.Add(1)
	if filter.IsEmpty() {
		// No context for a stream that is not opened: a child of the
		// session's would hold a map of children and a Done channel for
		// as long as the session lives (370 B of every idle client,
		// BenchmarkIdleClients).
		return
	}
	ctx, stop := context.WithCancel(s.Context())
	st.stop = stop
	st.loops.Add(1)
	cfg := m.host.Config()
	go func() {
		defer st.loops.Done()
		retries := policy.StreamRetries{NewBackOff: cfg.NewBackOff}
		for {
			ex := wire.NewExchange()
			err := s.MCP().Listen(ex.Bind(ctx), filter)
			if ctx.Err() != nil || st.gen.Load() != gen {
				return
			}
			end := policy.StreamEnd{}
			if err != nil {
				end = policy.StreamEnd{Failed: true, Verdict: policy.Classify(err, s.Policy(), ex, false)}
			}
			a := retries.After(end)
			switch a.Next {
			case policy.StreamRenew:
				if m.host.Discard(s, a.Discard, err) {
					cfg.Log.Info("subscriptions/listen refused: opening a new session in the background", "member", s.Member(), "why", a.Why, "err", err)
				}
				return
			case policy.StreamStop:
				cfg.Log.Warn("subscriptions/listen refused: not asked for again on this session until what is listened for changes",
					"member", s.Member(), "why", a.Why, "err", err)
				return
			}
			cfg.Log.Info("subscriptions/listen stream ended; listening again", "why", a.Why, "err", err, "pause", a.Pause)
			if wait.Sleep(ctx, a.Pause, nil) != wait.Elapsed {
				return
			}
		}
	}()
}
