package client

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"
)

// rememberTools caches tools for the replay decision; complete replaces the
// cache, a page adds to it.
func (c *ResilientClient) rememberTools(tools []mcp.Tool, complete bool) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	if complete || c.tools == nil {
		c.tools = make(map[string]mcp.Tool, len(tools))
	}
	for _, t := range tools {
		c.tools[t.Name] = t
	}
}

// toolSafe decides whether a tools/call may be replayed.
func (c *ResilientClient) toolSafe(name string) bool {
	c.toolsMu.RLock()
	t, ok := c.tools[name]
	c.toolsMu.RUnlock()
	if !ok {
		t = mcp.Tool{Name: name}
	}
	return c.opts.retryToolCall(t)
}

// refreshTools runs after every reconnect, if the caller has listed tools:
// the server behind the new session may be another version with other tools,
// or the same tools with other annotations, and the replay decision must not
// rest on the old ones. A changed set is announced to the notification
// handlers as notifications/tools/list_changed, as the server would have.
func (c *ResilientClient) refreshTools(ctx context.Context, s *session) {
	c.toolsMu.RLock()
	listed := c.tools != nil
	c.toolsMu.RUnlock()
	if !listed {
		return
	}
	res, err := s.mc.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		// Replaying on annotations that may be stale is the one thing not
		// to do: forget them, so nothing is replayed until the next list.
		c.log.Warn("could not list tools after reconnecting; no tool call will be replayed until the next tools/list", "err", err)
		c.toolsMu.Lock()
		c.tools = map[string]mcp.Tool{}
		c.toolsMu.Unlock()
		return
	}
	fresh := make(map[string]mcp.Tool, len(res.Tools))
	for _, t := range res.Tools {
		fresh[t.Name] = t
	}
	c.toolsMu.Lock()
	changed := !maps.EqualFunc(c.tools, fresh, sameTool)
	c.tools = fresh
	c.toolsMu.Unlock()
	if changed {
		c.log.Info("the server's tools changed across the reconnect", "tools", len(fresh))
		c.dispatchNotification(mcp.JSONRPCNotification{
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
// none. It is read again on every re-initialization.
func (c *ResilientClient) ServerInfo() mcp.Implementation {
	if vs := c.pool.Values(); len(vs) > 0 {
		return vs[0].result.ServerInfo
	}
	return mcp.Implementation{}
}
