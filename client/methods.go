package client

import (
	"context"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/hotpath"
	"github.com/resilientmcp/resilientmcp/client/internal/listings"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/streamable"
)

// mcpCall runs an mcp-go method as one call (do).
//
// tool is the tool of a tools/call, "" for every other method.
func mcpCall[T any](ctx context.Context, c *ResilientClient, method mcp.MCPMethod, tool string, fn func(context.Context, *mcpclient.Client) (T, error)) (T, error) {
	var out T
	err := c.do(ctx, string(method), tool, func(ctx context.Context, s *session) error {
		var err error
		out, err = fn(ctx, s.mc)
		return err
	})
	return out, err
}

// Initialize opens the client's session with req and returns the server's
// answer. The request is remembered and used for every session opened
// after (a re-initialization or a redial). A
// server that is down is waited for within ctx; an error no retry can fix
// (401, not an MCP endpoint, no common protocol version) returns at once.
//
// Calling Initialize is optional: the first call initializes with a request
// built from WithClientInfo. Calling it again opens a new session with the
// new request, as calling mcp-go's Initialize again would.
func (c *ResilientClient) Initialize(ctx context.Context, req mcp.InitializeRequest) (*mcp.InitializeResult, error) {
	r := &req
	c.sess.initReq.Store(r)
	for _, s := range c.sess.pool.Values() {
		if s.request != r {
			c.sess.pool.DiscardValue(s, &lostError{kind: policy.LossRequested, err: errReinitializeRequested})
		}
	}
	var res *mcp.InitializeResult
	err := c.do(ctx, string(mcp.MethodInitialize), "", func(_ context.Context, s *session) error {
		copied := *s.result
		res = &copied
		return nil
	})
	return res, err
}

// Ping checks that the server answers on the client's session: ping in the
// session era, server/discover in the stateless era (where mcp-go's Ping sends
// nothing).
func (c *ResilientClient) Ping(ctx context.Context) error {
	return c.do(ctx, string(mcp.MethodPing), "", func(ctx context.Context, s *session) error {
		_, err := c.sess.probe(ctx, s)
		return err
	})
}

// ListResourcesByPage lists one page of the server's resources, from req's
// cursor. Safe to repeat, so it is sent again after any failure a retry can
// fix.
func (c *ResilientClient) ListResourcesByPage(ctx context.Context, req mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, listings.ResourcesSpec(req, true))
	}
	return mcpCall(ctx, c, mcp.MethodResourcesList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListResourcesResult, error) {
		return mc.ListResourcesByPage(ctx, req)
	})
}

// ListResources lists every resource, following the pages from req's cursor
// as one call: a failure a retry can fix lists them again from the first
// page.
func (c *ResilientClient) ListResources(ctx context.Context, req mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, listings.ResourcesSpec(req, false))
	}
	return mcpCall(ctx, c, mcp.MethodResourcesList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListResourcesResult, error) {
		return mc.ListResources(ctx, req)
	})
}

// ListResourceTemplatesByPage lists one page of the server's resource
// templates, from req's cursor. Safe to repeat.
func (c *ResilientClient) ListResourceTemplatesByPage(ctx context.Context, req mcp.ListResourceTemplatesRequest) (*mcp.ListResourceTemplatesResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, listings.TemplatesSpec(req, true))
	}
	return mcpCall(ctx, c, mcp.MethodResourcesTemplatesList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListResourceTemplatesResult, error) {
		return mc.ListResourceTemplatesByPage(ctx, req)
	})
}

// ListResourceTemplates lists every resource template, following the pages
// as one call, as ListResources does.
func (c *ResilientClient) ListResourceTemplates(ctx context.Context, req mcp.ListResourceTemplatesRequest) (*mcp.ListResourceTemplatesResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, listings.TemplatesSpec(req, false))
	}
	return mcpCall(ctx, c, mcp.MethodResourcesTemplatesList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListResourceTemplatesResult, error) {
		return mc.ListResourceTemplates(ctx, req)
	})
}

// ReadResource reads a resource's contents. Reading has no effect on the
// server, so it is sent again after any failure a retry can fix; input the
// server asks for midway (2026-07-28's multi round-trip requests) is given
// by the handlers of WithClientOptions, as with mcp-go.
func (c *ResilientClient) ReadResource(ctx context.Context, req mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	ctx = c.obs.Resource(ctx, req.Params.URI)
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, listings.ReadSpec(req))
	}
	return mcpCall(ctx, c, mcp.MethodResourcesRead, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ReadResourceResult, error) {
		return mc.ReadResource(ctx, req)
	})
}

// Subscribe subscribes to updates of a resource. The subscription is
// remembered and restored on every new session, so updates keep arriving
// across reconnects. In the stateless era it is a filter on the
// session's subscriptions/listen stream, which the client keeps open.
func (c *ResilientClient) Subscribe(ctx context.Context, req mcp.SubscribeRequest) error {
	ctx = c.obs.Resource(ctx, req.Params.URI)
	err := c.do(ctx, string(mcp.MethodResourcesSubscribe), "", func(ctx context.Context, s *session) error {
		//lint:ignore SA1019 resources/subscribe is how the session era subscribes; mcp-go turns it into a listen filter in the stateless era
		if err := s.mc.Subscribe(ctx, req); err != nil {
			return err
		}
		c.messages.Subscribed(req.Params.URI, true)
		c.messages.Relisten(s)
		return nil
	})
	return err
}

// Unsubscribe ends a subscription, and forgets it.
func (c *ResilientClient) Unsubscribe(ctx context.Context, req mcp.UnsubscribeRequest) error {
	ctx = c.obs.Resource(ctx, req.Params.URI)
	return c.do(ctx, string(mcp.MethodResourcesUnsubscribe), "", func(ctx context.Context, s *session) error {
		//lint:ignore SA1019 the counterpart of Subscribe, in both eras
		if err := s.mc.Unsubscribe(ctx, req); err != nil {
			return err
		}
		c.messages.Subscribed(req.Params.URI, false)
		c.messages.Relisten(s)
		return nil
	})
}

// ListPromptsByPage lists one page of the server's prompts, from req's
// cursor. Safe to repeat.
func (c *ResilientClient) ListPromptsByPage(ctx context.Context, req mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, listings.PromptsSpec(req, true))
	}
	return mcpCall(ctx, c, mcp.MethodPromptsList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListPromptsResult, error) {
		return mc.ListPromptsByPage(ctx, req)
	})
}

// ListPrompts lists every prompt, following the pages as one call, as
// ListResources does.
func (c *ResilientClient) ListPrompts(ctx context.Context, req mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, listings.PromptsSpec(req, false))
	}
	return mcpCall(ctx, c, mcp.MethodPromptsList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListPromptsResult, error) {
		return mc.ListPrompts(ctx, req)
	})
}

// GetPrompt renders a prompt with req's arguments. Safe to repeat, as
// ReadResource is.
func (c *ResilientClient) GetPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	ctx = c.obs.Prompt(ctx, req.Params.Name)
	return mcpCall(ctx, c, mcp.MethodPromptsGet, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.GetPromptResult, error) {
		return mc.GetPrompt(ctx, req)
	})
}

// ListToolsByPage lists one page of tools. Their annotations inform the
// replay decision; listing is never needed for it.
func (c *ResilientClient) ListToolsByPage(ctx context.Context, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, c.listings.ToolsSpec(req, true))
	}
	res, err := mcpCall(ctx, c, mcp.MethodToolsList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListToolsResult, error) {
		return streamable.ListToolsByPage(ctx, mc, req)
	})
	if err == nil {
		c.listings.RememberTools(res.Tools, false)
	}
	return res, err
}

// ListTools lists every tool. Their annotations inform the replay decision;
// listing is never needed for it: the client lists tools itself when a
// decision needs a tool it has not seen.
//
// A tool's schemas are the server's, every keyword kept: where mcp-go's
// typed InputSchema (OutputSchema) would lose one ($schema, allOf,
// if/then/else, $anchor...), RawInputSchema (RawOutputSchema) holds the
// server's bytes and the typed schema is empty, as mcp-go has it for a tool
// with a raw schema; read the raw one first. So for every listing method,
// and for the tools WithRetryToolCall is given.
//
// Like every listing and ReadResource, it is answered from the client's
// cache within the ttlMs the server gave (SEP-2549; Fresh asks the server),
// and, when the server cannot answer, with the last good listing, marked
// stale (Stale, WithMaxStale). WithListingCache(false) turns both off.
func (c *ResilientClient) ListTools(ctx context.Context, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	if !c.opts.listingCacheOff {
		return listings.Get(ctx, &c.listings, c.listings.ToolsSpec(req, false))
	}
	res, err := mcpCall(ctx, c, mcp.MethodToolsList, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListToolsResult, error) {
		return streamable.ListTools(ctx, mc, req)
	})
	if err == nil {
		c.listings.RememberTools(res.Tools, req.Params.Cursor == "")
	}
	return res, err
}

// CallTool calls a tool. If an attempt fails in a way that leaves unknown
// whether the tool ran, it is sent again only if WithRetryToolCall says the
// tool is safe to repeat, judged by the annotations the server lists for it
// (the client lists the tools itself when it needs to, once for every
// goroutine); otherwise the error wraps ErrOutcomeUnknown.
//
// A tool whose execution.taskSupport is "required", or "optional" with
// AsTask or WithTaskCalls, is called as a task: see AsTask.
func (c *ResilientClient) CallTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	// Plain or task, decided once, before the call, by the policy. The
	// task room is asked only when the policy cannot decide without the
	// tools' listing, or decides for a task.
	o := callOptionsOf(ctx)
	asked := c.opts.taskCalls || o != nil && o.asTask
	support, listed := c.listings.TaskSupport(name)
	form := policy.CallAs(support, listed, asked)
	if form == policy.LearnFirst {
		form = c.tasks.FormOnceListed(ctx, name, asked)
	}
	// One call, as the observers and Stats see it, whichever form it ends
	// in: a plain tools/call the server refused for want of a task is
	// followed by the task, within the same books.
	var res *mcp.CallToolResult
	err := c.call(ctx, string(mcp.MethodToolsCall), name, func(ctx context.Context) error {
		var err error
		if form == policy.CallAsTask {
			res, err = c.tasks.Run(ctx, &req, nil)
		} else {
			err = c.run(ctx, string(mcp.MethodToolsCall), name, func(ctx context.Context, s *session) error {
				var err error
				var hot bool
				if res, hot, err = callToolHot(ctx, c, s, &req); hot {
					return err
				}
				res, err = s.mc.CallTool(ctx, req)
				return err
			})
			if form == policy.PlainThenTask && (err != nil || res != nil && res.IsError) && c.tasks.Refused(ctx, name, res, err) {
				res, err = c.tasks.Run(ctx, &req, nil)
			}
		}
		if err != nil {
			res = nil
		}
		c.obs.ToolResult(ctx, res)
		return err
	})
	return res, err
}

// callToolHot makes one attempt of req on s as the hot path writes it;
// false: mcp-go's CallTool makes it (hotpath.Writer.Call). It is here,
// beside CallTool, so that a plain call runs no code of hotpath.go.
func callToolHot(ctx context.Context, c *ResilientClient, s *session, req *mcp.CallToolRequest) (*mcp.CallToolResult, bool, error) {
	if s.hot == nil {
		return nil, false, nil
	}
	return s.hot.Call(ctx, &hotpath.Session{
		MCP:             s.mc,
		SessionEra:      s.sessionEra,
		Version:         s.version,
		Init:            s.request,
		Done:            s.ctx,
		Endpoint:        c.endpoint,
		Headers:         c.opts.headers,
		HeaderFunc:      c.opts.headerFunc,
		ParserFallbacks: &c.stats.ParserFallbacks,
	}, req)
}

// SetLevel sets the level of log messages the server sends. The level is
// remembered and restored on every new session.
func (c *ResilientClient) SetLevel(ctx context.Context, req mcp.SetLevelRequest) error {
	return c.do(ctx, string(mcp.MethodSetLogLevel), "", func(ctx context.Context, s *session) error {
		s.levelSet(req.Params.Level)
		//lint:ignore SA1019 SetLevel is part of MCPClient; mcp-go sends it in the session era and records it per request in the stateless era
		if err := s.mc.SetLevel(ctx, req); err != nil {
			return err
		}
		c.messages.SetLevel(req.Params.Level)
		return nil
	})
}

// Complete asks the server for completions of a prompt's or a resource
// template's argument (completion/complete). Safe to repeat.
func (c *ResilientClient) Complete(ctx context.Context, req mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return mcpCall(ctx, c, mcp.MethodCompletionComplete, "", func(ctx context.Context, mc *mcpclient.Client) (*mcp.CompleteResult, error) {
		return mc.Complete(ctx, req)
	})
}
