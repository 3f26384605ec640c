// Package resilientmcp makes MCP clients survive the real world.
//
// Agents that talk to MCP servers over Streamable HTTP break in the same few
// ways: a restarted server no longer knows the session and answers 404; an
// idle connection is dropped by a load balancer and the next call fails; a
// session goes bad under many goroutines; a reconnect loop without backoff
// hammers a server that is coming back. The client package's ResilientClient
// wraps mcp-go's streamable HTTP client and hides all of that: it
// re-initializes stale sessions once for all goroutines and replays the call,
// waits for an unreachable server with exponential backoff, and never sends a
// call twice unless it is safe to repeat. Nor does it trust what comes back:
// an answer carrying another request's id is never returned, an answer
// larger than WithMaxResponseBytes is refused at the limit, and credentials
// do not follow a redirect to another origin.
//
// Replace
//
//	c, _ := mcpclient.NewStreamableHttpClient(url)
//	_ = c.Start(ctx)
//	_, _ = c.Initialize(ctx, initReq)
//
// with
//
//	c, err := client.New(url, client.WithKeepAlive(30*time.Second))
//	if err != nil {
//		return err // a bad URL or option: New does no I/O
//	}
//	defer c.Close()
//	_, err = c.Initialize(ctx, initReq) // optional: the first call initializes
//	res, err := c.CallTool(ctx, req)
//
// ResilientClient also has the methods of mcp-go's concrete *client.Client
// that MCPClient lacks (GetSessionId, the iterators, the tasks API, Listen,
// OnConnectionLost, ...), with the same signatures, so code written against
// the concrete type compiles after the swap; only Start and GetTransport are
// left out. When an elicitation handler accepts a form and leaves fields
// out, the client fills them in from the form's defaults (SEP-1034).
//
// What the client does can be watched: client.WithObserver is told of every
// call, every attempt to send it and why, and what the client does on its
// own; package otelmcp is an observer that records OpenTelemetry traces and
// metrics by MCP's semantic conventions, and carries the trace context to
// the server in each request's _meta.
//
// The mechanisms live in packages of their own that know nothing of MCP or of
// each other: reconnect (backoff, retry budget), health (idle tracking,
// keepalive probing, failure threshold) and pool (sessions shared by
// goroutines, one replacement per generation). Package client is the one
// place that joins them to mcp-go.
package resilientmcp
