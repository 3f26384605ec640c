package client

import (
	"context"
	"iter"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/listings"
	"github.com/resilientmcp/resilientmcp/client/internal/streamable"
)

// IterTools returns an iterator over the server's tools that fetches pages
// as the loop consumes them, starting from req's cursor; breaking out of the
// loop stops the requests. A failure ends it with one (zero value, error)
// pair; the error is one the error contract allows.
//
// Each page is a call of its own, so it survives what any call survives. A
// listing that meets a reconnect (a page comes from a session that replaced
// a lost one after the first page: a re-initialization or a redial) starts
// again from req's cursor, since a cursor of
// the old server means nothing to the new one, and skips what it already
// yielded: the loop sees each tool once, and never pages of two servers
// stitched together. After WithMaxAttempts such restarts it gives up with
// ErrUnavailable. As with ListToolsByPage, the tools inform replay
// decisions.
func (c *ResilientClient) IterTools(ctx context.Context, req mcp.ListToolsRequest) iter.Seq2[mcp.Tool, error] {
	return listings.Iterate(ctx, &c.listings, mcp.MethodToolsList, req.Params.Cursor,
		func(ctx context.Context, mc *mcpclient.Client, cursor mcp.Cursor) ([]mcp.Tool, mcp.Cursor, error) {
			r := req
			r.Params.Cursor = cursor
			res, err := streamable.ListToolsByPage(ctx, mc, r)
			if err != nil {
				return nil, "", err
			}
			c.listings.RememberTools(res.Tools, false)
			return res.Tools, res.NextCursor, nil
		},
		func(t mcp.Tool) string { return t.Name })
}

// IterPrompts returns an iterator over the server's prompts, paged and
// restarted as IterTools is.
func (c *ResilientClient) IterPrompts(ctx context.Context, req mcp.ListPromptsRequest) iter.Seq2[mcp.Prompt, error] {
	return listings.Iterate(ctx, &c.listings, mcp.MethodPromptsList, req.Params.Cursor,
		func(ctx context.Context, mc *mcpclient.Client, cursor mcp.Cursor) ([]mcp.Prompt, mcp.Cursor, error) {
			r := req
			r.Params.Cursor = cursor
			res, err := mc.ListPromptsByPage(ctx, r)
			if err != nil {
				return nil, "", err
			}
			return res.Prompts, res.NextCursor, nil
		},
		func(p mcp.Prompt) string { return p.Name })
}

// IterResources returns an iterator over the server's resources, paged and
// restarted as IterTools is.
func (c *ResilientClient) IterResources(ctx context.Context, req mcp.ListResourcesRequest) iter.Seq2[mcp.Resource, error] {
	return listings.Iterate(ctx, &c.listings, mcp.MethodResourcesList, req.Params.Cursor,
		func(ctx context.Context, mc *mcpclient.Client, cursor mcp.Cursor) ([]mcp.Resource, mcp.Cursor, error) {
			r := req
			r.Params.Cursor = cursor
			res, err := mc.ListResourcesByPage(ctx, r)
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		},
		func(r mcp.Resource) string { return r.URI })
}

// IterResourceTemplates returns an iterator over the server's resource
// templates, paged and restarted as IterTools is.
func (c *ResilientClient) IterResourceTemplates(ctx context.Context, req mcp.ListResourceTemplatesRequest) iter.Seq2[mcp.ResourceTemplate, error] {
	return listings.Iterate(ctx, &c.listings, mcp.MethodResourcesTemplatesList, req.Params.Cursor,
		func(ctx context.Context, mc *mcpclient.Client, cursor mcp.Cursor) ([]mcp.ResourceTemplate, mcp.Cursor, error) {
			r := req
			r.Params.Cursor = cursor
			res, err := mc.ListResourceTemplatesByPage(ctx, r)
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		},
		func(t mcp.ResourceTemplate) string {
			if t.URITemplate == nil || t.URITemplate.Template == nil {
				return t.Name
			}
			return t.URITemplate.Raw()
		})
}
