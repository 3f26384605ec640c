package client

import (
	"context"
	"fmt"
	"iter"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
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
	return iterate(ctx, c, mcp.MethodToolsList, req.Params.Cursor,
		func(ctx context.Context, mc *mcpclient.Client, cursor mcp.Cursor) ([]mcp.Tool, mcp.Cursor, error) {
			r := req
			r.Params.Cursor = cursor
			res, err := listToolsByPage(ctx, mc, r)
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
	return iterate(ctx, c, mcp.MethodPromptsList, req.Params.Cursor,
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
	return iterate(ctx, c, mcp.MethodResourcesList, req.Params.Cursor,
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
	return iterate(ctx, c, mcp.MethodResourcesTemplatesList, req.Params.Cursor,
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

// iterate pages through a list method for the iterators. key names an item,
// so that a listing started again does not yield it twice.
func iterate[T any](ctx context.Context, c *ResilientClient, method mcp.MCPMethod, start mcp.Cursor,
	page func(context.Context, *mcpclient.Client, mcp.Cursor) ([]T, mcp.Cursor, error),
	key func(T) string,
) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yielded := map[string]struct{}{}
		for restarts := 0; ; restarts++ {
			if a := policy.AfterListingRestart(restarts, c.opts.maxAttempts); a.End != policy.Continue {
				yield(zero, &callError{kind: ErrUnavailable, method: string(method), why: a.Why})
				return
			}
			again, err := iterateOnce(ctx, c, method, start, page, key, yielded, yield)
			if err != nil {
				yield(zero, err)
				return
			}
			if !again {
				return
			}
			c.log.Info("the session was replaced during a listing; listing again from the start", "method", method)
		}
	}
}

// iterateOnce is one pass of a listing. It reports again if a page came from
// a session that replaced a lost one after the first page: the listing must
// start over. Sessions of a pool that was still filling do not count.
func iterateOnce[T any](ctx context.Context, c *ResilientClient, method mcp.MCPMethod, start mcp.Cursor,
	page func(context.Context, *mcpclient.Client, mcp.Cursor) ([]T, mcp.Cursor, error),
	key func(T) string, yielded map[string]struct{}, yield func(T, error) bool,
) (again bool, err error) {
	cursor := start
	seen := map[mcp.Cursor]struct{}{cursor: {}}
	var newest uint64 // every session up to this one was open when the first page came
	for first := true; ; first = false {
		var items []T
		var next mcp.Cursor
		var serial uint64
		err := c.do(ctx, string(method), "", func(ctx context.Context, s *session) error {
			var err error
			items, next, err = page(ctx, s.mc, cursor)
			serial = s.serial
			return err
		})
		if err != nil {
			return false, err
		}
		if first {
			newest = c.parity.serials.Load()
		} else if serial > newest {
			return true, nil
		}
		for _, item := range items {
			k := key(item)
			if _, dup := yielded[k]; dup {
				continue
			}
			yielded[k] = struct{}{}
			if !yield(item, nil) {
				return false, nil
			}
		}
		if next == "" {
			return false, nil
		}
		if _, dup := seen[next]; dup {
			return false, fmt.Errorf("%w: %q", mcpclient.ErrRepeatedListCursor, next)
		}
		seen[next] = struct{}{}
		cursor = next
	}
}
