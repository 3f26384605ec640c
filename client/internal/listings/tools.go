package listings

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// The server's tools, for the replay decision (Cache).

// RememberTools caches tools a caller listed; complete replaces the cache,
// a page adds to it.
func (l *Cache) RememberTools(tools []mcp.Tool, complete bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rememberToolsLocked(tools, complete, l.gen)
}

// rememberToolsLocked caches a listing that began when the change count was
// gen: a change announced since leaves it stale.
func (l *Cache) rememberToolsLocked(tools []mcp.Tool, complete bool, gen uint64) {
	if complete || l.tools == nil {
		l.tools = make(map[string]mcp.Tool, len(tools))
		l.fresh = gen
	}
	for _, t := range tools {
		l.tools[t.Name] = t
	}
}

// MarkToolsStale records that the cached tools may no longer be the
// server's: it announced a change, or listing them after a reconnect failed.
func (l *Cache) MarkToolsStale() {
	l.mu.Lock()
	l.gen++
	l.mu.Unlock()
}

// DoubtTools marks the cached tools stale after a request sent at sent
// lost its connection to a sessionless server (policy.Reidentify), unless
// they are stale already or were listed after it was sent: the many calls
// one loss breaks share one listing.
func (l *Cache) DoubtTools(sent time.Time) {
	k := keyOf(mcp.MethodToolsList, false, "")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fresh != l.gen {
		return
	}
	if sl := l.listings.slots[k]; sl != nil {
		for _, e := range []*entry{sl.public, sl.private} {
			if e != nil && !e.fromStore && e.fetched.After(sent) {
				return
			}
		}
	}
	l.gen++
}

// KnownTool returns the cached tool if the cache has it, and whether the
// cache is current.
func (l *Cache) KnownTool(name string) (t mcp.Tool, ok, current bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok = l.tools[name]
	return t, ok, l.fresh == l.gen
}

// knownToolAnyAge returns the cached tool, current or not.
func (l *Cache) knownToolAnyAge(name string) (mcp.Tool, bool) {
	t, ok, _ := l.KnownTool(name)
	return t, ok
}

// TaskSupport is the listed tool's taskSupport, and whether the client
// has a listing of the tools at all. It reads the one field it needs of
// the cached tool, on every tools/call, rather than a copy of the tool.
func (l *Cache) TaskSupport(name string) (mcp.TaskSupport, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.tools[name].Execution
	if e == nil {
		return "", l.tools != nil
	}
	return e.TaskSupport, true
}

// ToolSafe decides whether a tools/call whose outcome is unknown may be sent
// again. A tool the server does not list is not safe: it has no annotations.
//
// When the annotations are stale and listing them again fails (F41: a
// restart that took the pool's sessions with it), the decision rests on
// the last listing seen: tools' annotations rarely change, and a server
// that changed them announces it (tools/list_changed) or is listed again
// after the reconnect that brought it. Only a tool never listed, or
// listed by a server whose identity has since changed, is taken as not
// safe.
func (l *Cache) ToolSafe(ctx context.Context, name string) bool {
	t, ok, current := l.KnownTool(name)
	if !ok || !current {
		if err := l.LearnTools(ctx); err != nil {
			// Re-read: a change of the server's identity meanwhile drops
			// what was seen of the old one's tools.
			last, seen := l.knownToolAnyAge(name)
			if seen {
				l.host.Log().Warn("could not list the tools to decide a replay; deciding on the last listing seen", "tool", name, "err", wire.Describe(err))
				t = last
			} else {
				l.host.Log().Warn("could not list the tools to decide a replay; the tool is taken as not safe to repeat", "tool", name, "err", wire.Describe(err))
				t = mcp.Tool{Name: name}
			}
		} else if t, ok, _ = l.KnownTool(name); !ok {
			// A change announced while the listing was under way (a
			// server that adds tools once a session opens) leaves it
			// marked stale, but it is no older than this decision.
			t = mcp.Tool{Name: name}
		}
	}
	return l.host.RetryToolCall(t)
}

// LearnTools lists the server's tools into the cache, once for every caller
// that asks while a listing is under way. The listing is the client's, not
// the caller's: it runs until done (bounded by WithCallTimeout, and by
// Close), so that one caller's deadline does not fail the others'; each
// caller waits for it within its own ctx (F31).
func (l *Cache) LearnTools(ctx context.Context) error {
	done := l.listing.DoChan("", l.fetchTools)
	select {
	case r := <-done:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetchTools is the shared listing of LearnTools.
func (l *Cache) fetchTools() (any, error) {
	h := l.host
	// Close waits for listings started before it; none may start after.
	if err := h.StartBackground(); err != nil {
		return nil, err
	}
	defer h.EndBackground()
	l.mu.Lock()
	gen := l.gen
	l.mu.Unlock()

	lifetime, timeout := h.Lifetime()
	ctx, cancel := context.WithTimeout(lifetime, timeout)
	defer cancel()
	var res *mcp.ListToolsResult
	var server Session
	err := h.Run(ctx, string(mcp.MethodToolsList), func(ctx context.Context, s Session) error {
		var err error
		res, err = h.ListTools(ctx, s.MC, mcp.ListToolsRequest{}, false)
		server = s
		return err
	})
	if err == nil {
		l.toolsListed(res, gen, server, true)
	}
	return nil, err
}

// RefreshTools runs after every reconnect, if the tools were ever listed
// (by the caller or by the client): the server behind the new session may
// be another version with other tools, or the same tools with other
// annotations, and the replay decision must not rest on the old ones. A
// changed set is announced to the notification handlers as
// notifications/tools/list_changed, as the server would have.
func (l *Cache) RefreshTools(ctx context.Context, s Session) {
	l.mu.Lock()
	listed, gen := l.tools != nil, l.gen
	l.mu.Unlock()
	if !listed {
		return
	}
	res, err := l.host.ListTools(ctx, s.MC, mcp.ListToolsRequest{}, false)
	if err != nil {
		// Replaying on annotations that may be stale is the one thing not
		// to do: the next decision lists them again.
		l.host.Log().Warn("could not list tools after reconnecting; they will be listed again when a replay needs them", "err", wire.Describe(err))
		l.MarkToolsStale()
		return
	}
	fresh := make(map[string]mcp.Tool, len(res.Tools))
	for _, t := range res.Tools {
		fresh[t.Name] = t
	}
	l.mu.Lock()
	changed := !maps.EqualFunc(l.tools, fresh, sameTool)
	l.tools, l.fresh = fresh, gen
	l.mu.Unlock()
	l.toolsListed(res, gen, s, false)
	if changed {
		// len(res.Tools), not len(fresh): fresh is the cache now, which a
		// page listed meanwhile may be adding to.
		l.host.Log().Info("the server's tools changed across the reconnect", "tools", len(res.Tools))
		l.host.ToolsChanged()
	}
}

func sameTool(a, b mcp.Tool) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// noteServerChange logs a change of server identity or protocol version
// between the session replaced and the one replacing it (zero: none).
func (l *Cache) noteServerChange(prev, next Session) {
	if prev.Info == nil || next.Info == nil {
		return
	}
	from, to := *prev.Info, *next.Info
	if prev.Version != next.Version || from.Name != to.Name || from.Version != to.Version {
		l.host.Log().Info("the server changed across the reconnect",
			"from_version", prev.Version, "to_version", next.Version,
			"from_server", from.Name+" "+from.Version, "to_server", to.Name+" "+to.Version)
	}
}
