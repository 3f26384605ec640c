package client

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/singleflight"
)

// toolCache is what the client knows of the server's tools, for the one
// decision that needs them: whether a tools/call whose outcome is unknown
// may be sent again. The client fills it itself, so that the decision is
// the same whether or not the caller ever lists tools: the first time a
// decision needs a tool it has not seen (or after the server announced a
// change), one tools/list is sent for every goroutine that needs it. A call
// that succeeds never waits for it.
type toolCache struct {
	listing singleflight.Group // the listing under way, shared by every caller that needs it

	// mu guards the fields below, and is Close's barrier for the
	// listings' background work (ResilientClient.background); a leaf, and
	// no request is sent under it.
	mu    sync.Mutex
	tools map[string]mcp.Tool // nil until the tools were first listed
	gen   uint64              // counts changes announced by the server
	fresh uint64              // gen of the listing in tools; != gen: stale
	// listings are the answers to listings and reads, tools/list's among
	// them: the tools above are theirs (listings.go).
	listings listingEntries
}

// rememberTools caches tools; complete replaces the cache, a page adds to it.
func (c *ResilientClient) rememberTools(tools []mcp.Tool, complete bool) {
	c.tools.mu.Lock()
	defer c.tools.mu.Unlock()
	c.rememberToolsLocked(tools, complete, c.tools.gen)
}

// rememberToolsLocked caches a listing that began when the change count was
// gen: a change announced since leaves it stale.
func (c *ResilientClient) rememberToolsLocked(tools []mcp.Tool, complete bool, gen uint64) {
	if complete || c.tools.tools == nil {
		c.tools.tools = make(map[string]mcp.Tool, len(tools))
		c.tools.fresh = gen
	}
	for _, t := range tools {
		c.tools.tools[t.Name] = t
	}
}

// markToolsStale records that the cached tools may no longer be the
// server's: it announced a change, or listing them after a reconnect failed.
func (c *ResilientClient) markToolsStale() {
	c.tools.mu.Lock()
	c.tools.gen++
	c.tools.mu.Unlock()
}

// doubtTools marks the cached tools stale after a request sent at sent
// lost its connection to a sessionless server (policy.Reidentify), unless
// they are stale already or were listed after it was sent: the many calls
// one loss breaks share one listing.
func (c *ResilientClient) doubtTools(sent time.Time) {
	key := c.toolsSpec(mcp.ListToolsRequest{}, false).key
	c.tools.mu.Lock()
	defer c.tools.mu.Unlock()
	if c.tools.fresh != c.tools.gen {
		return
	}
	if sl := c.tools.listings.slots[key]; sl != nil {
		for _, e := range []*listingEntry{sl.public, sl.private} {
			if e != nil && !e.fromStore && e.fetched.After(sent) {
				return
			}
		}
	}
	c.tools.gen++
}

// knownTool returns the cached tool if the cache has it, and whether the
// cache is current.
func (c *ResilientClient) knownTool(name string) (t mcp.Tool, ok, current bool) {
	c.tools.mu.Lock()
	defer c.tools.mu.Unlock()
	t, ok = c.tools.tools[name]
	return t, ok, c.tools.fresh == c.tools.gen
}

// knownToolAnyAge returns the cached tool, current or not.
func (c *ResilientClient) knownToolAnyAge(name string) (mcp.Tool, bool) {
	t, ok, _ := c.knownTool(name)
	return t, ok
}

// toolSafe decides whether a tools/call whose outcome is unknown may be sent
// again. A tool the server does not list is not safe: it has no annotations.
//
// When the annotations are stale and listing them again fails (F41: a
// restart that took the pool's sessions with it), the decision rests on
// the last listing seen: tools' annotations rarely change, and a server
// that changed them announces it (tools/list_changed) or is listed again
// after the reconnect that brought it. Only a tool never listed, or
// listed by a server whose identity has since changed, is taken as not
// safe.
func (c *ResilientClient) toolSafe(ctx context.Context, name string) bool {
	t, ok, current := c.knownTool(name)
	if !ok || !current {
		if err := c.learnTools(ctx); err != nil {
			// Re-read: a change of the server's identity meanwhile drops
			// what was seen of the old one's tools.
			last, seen := c.knownToolAnyAge(name)
			if seen {
				c.log.Warn("could not list the tools to decide a replay; deciding on the last listing seen", "tool", name, "err", describe(err))
				t = last
			} else {
				c.log.Warn("could not list the tools to decide a replay; the tool is taken as not safe to repeat", "tool", name, "err", describe(err))
				t = mcp.Tool{Name: name}
			}
		} else if t, ok, _ = c.knownTool(name); !ok {
			// A change announced while the listing was under way (a
			// server that adds tools once a session opens) leaves it
			// marked stale, but it is no older than this decision.
			t = mcp.Tool{Name: name}
		}
	}
	return c.opts.retryToolCall(t)
}

// learnTools lists the server's tools into the cache, once for every caller
// that asks while a listing is under way. The listing is the client's, not
// the caller's: it runs until done (bounded by WithCallTimeout, and by
// Close), so that one caller's deadline does not fail the others'; each
// caller waits for it within its own ctx (F31).
func (c *ResilientClient) learnTools(ctx context.Context) error {
	done := c.tools.listing.DoChan("", c.fetchTools)
	select {
	case r := <-done:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetchTools is the shared listing of learnTools.
func (c *ResilientClient) fetchTools() (any, error) {
	c.tools.mu.Lock()
	if c.closed.Load() {
		// Close waits for listings started before it; none may start
		// after (it takes this lock once it has set closed).
		c.tools.mu.Unlock()
		return nil, ErrClosed
	}
	c.background.Add(1)
	gen := c.tools.gen
	c.tools.mu.Unlock()
	defer c.background.Done()

	ctx, cancel := context.WithTimeout(c.lifetime, c.opts.callTimeout)
	defer cancel()
	var res *mcp.ListToolsResult
	var server *session
	err := c.run(ctx, string(mcp.MethodToolsList), "", func(ctx context.Context, s *session) error {
		var err error
		res, err = listTools(ctx, s.mc, mcp.ListToolsRequest{})
		server = s
		return err
	})
	if err == nil {
		c.toolsListed(res, gen, server, true)
	}
	return nil, err
}

// refreshTools runs after every reconnect, if the tools were ever listed
// (by the caller or by the client): the server behind the new session may
// be another version with other tools, or the same tools with other
// annotations, and the replay decision must not rest on the old ones. A
// changed set is announced to the notification handlers as
// notifications/tools/list_changed, as the server would have.
func (c *ResilientClient) refreshTools(ctx context.Context, s *session) {
	c.tools.mu.Lock()
	listed, gen := c.tools.tools != nil, c.tools.gen
	c.tools.mu.Unlock()
	if !listed {
		return
	}
	res, err := listTools(ctx, s.mc, mcp.ListToolsRequest{})
	if err != nil {
		// Replaying on annotations that may be stale is the one thing not
		// to do: the next decision lists them again.
		c.log.Warn("could not list tools after reconnecting; they will be listed again when a replay needs them", "err", describe(err))
		c.markToolsStale()
		return
	}
	fresh := make(map[string]mcp.Tool, len(res.Tools))
	for _, t := range res.Tools {
		fresh[t.Name] = t
	}
	c.tools.mu.Lock()
	changed := !maps.EqualFunc(c.tools.tools, fresh, sameTool)
	c.tools.tools, c.tools.fresh = fresh, gen
	c.tools.mu.Unlock()
	c.toolsListed(res, gen, s, false)
	if changed {
		// len(res.Tools), not len(fresh): fresh is the cache now, which a
		// page listed meanwhile may be adding to.
		c.log.Info("the server's tools changed across the reconnect", "tools", len(res.Tools))
		c.messages.Dispatch(mcp.JSONRPCNotification{
			JSONRPC:      mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged},
		})
	}
}

func sameTool(a, b mcp.Tool) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// noteServerChange logs a change of server identity or protocol version
// between the session replaced and the one replacing it.
func (c *ResilientClient) noteServerChange(prev, next *session) {
	if prev == nil || prev == next {
		return
	}
	from, to := prev.result.ServerInfo, next.result.ServerInfo
	if prev.version != next.version || from.Name != to.Name || from.Version != to.Version {
		c.log.Info("the server changed across the reconnect",
			"from_version", prev.version, "to_version", next.version,
			"from_server", from.Name+" "+from.Version, "to_server", to.Name+" "+to.Version)
	}
}

// ServerInfo is the identity of the server behind the session in service,
// as it gave it when the session was opened, or the zero value when there is
// none. It is read again with every new session (a re-initialization or a
// redial).
func (c *ResilientClient) ServerInfo() mcp.Implementation {
	if vs := c.pool.Values(); len(vs) > 0 {
		return vs[0].result.ServerInfo
	}
	return mcp.Implementation{}
}
