package client

import (
	"context"
	"encoding/json"
	"slices"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// How each listing and read is cached (listings.go): its key, and its
// result's fields.

func listingKeyOf(method mcp.MCPMethod, page bool, cursor mcp.Cursor) listingKey {
	return listingKey{method: string(method), page: page, arg: string(cursor)}
}

func decodeJSON[T any](raw json.RawMessage) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	return v, nil
}

// toolsSpec is tools/list's: its answers are the tools the replay decision
// reads (rememberToolsLocked), in the same cache.
func (c *ResilientClient) toolsSpec(req mcp.ListToolsRequest, page bool) *listingSpec[*mcp.ListToolsResult] {
	complete := !page && req.Params.Cursor == ""
	return &listingSpec[*mcp.ListToolsResult]{
		method: mcp.MethodToolsList, kind: kindTools, key: listingKeyOf(mcp.MethodToolsList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListToolsResult, error) {
			if page {
				return listToolsByPage(ctx, mc, req)
			}
			return listTools(ctx, mc, req)
		},
		hints: func(r *mcp.ListToolsResult) (*int64, mcp.CacheScope) { return r.TTLMs, r.CacheScope },
		meta:  func(r *mcp.ListToolsResult) **mcp.Meta { return &r.Meta },
		clone: func(r *mcp.ListToolsResult) *mcp.ListToolsResult {
			cp := *r
			cp.Tools = slices.Clone(r.Tools)
			return &cp
		},
		decode: decodeJSON[mcp.ListToolsResult],
		remember: func(r *mcp.ListToolsResult, gen uint64) {
			c.rememberToolsLocked(r.Tools, complete, gen)
		},
	}
}

func promptsSpec(req mcp.ListPromptsRequest, page bool) *listingSpec[*mcp.ListPromptsResult] {
	return &listingSpec[*mcp.ListPromptsResult]{
		method: mcp.MethodPromptsList, kind: kindPrompts, key: listingKeyOf(mcp.MethodPromptsList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListPromptsResult, error) {
			if page {
				return mc.ListPromptsByPage(ctx, req)
			}
			return mc.ListPrompts(ctx, req)
		},
		hints: func(r *mcp.ListPromptsResult) (*int64, mcp.CacheScope) { return r.TTLMs, r.CacheScope },
		meta:  func(r *mcp.ListPromptsResult) **mcp.Meta { return &r.Meta },
		clone: func(r *mcp.ListPromptsResult) *mcp.ListPromptsResult {
			cp := *r
			cp.Prompts = slices.Clone(r.Prompts)
			return &cp
		},
		decode: decodeJSON[mcp.ListPromptsResult],
	}
}

func resourcesSpec(req mcp.ListResourcesRequest, page bool) *listingSpec[*mcp.ListResourcesResult] {
	return &listingSpec[*mcp.ListResourcesResult]{
		method: mcp.MethodResourcesList, kind: kindResources, key: listingKeyOf(mcp.MethodResourcesList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListResourcesResult, error) {
			if page {
				return mc.ListResourcesByPage(ctx, req)
			}
			return mc.ListResources(ctx, req)
		},
		hints: func(r *mcp.ListResourcesResult) (*int64, mcp.CacheScope) { return r.TTLMs, r.CacheScope },
		meta:  func(r *mcp.ListResourcesResult) **mcp.Meta { return &r.Meta },
		clone: func(r *mcp.ListResourcesResult) *mcp.ListResourcesResult {
			cp := *r
			cp.Resources = slices.Clone(r.Resources)
			return &cp
		},
		decode: decodeJSON[mcp.ListResourcesResult],
	}
}

func templatesSpec(req mcp.ListResourceTemplatesRequest, page bool) *listingSpec[*mcp.ListResourceTemplatesResult] {
	return &listingSpec[*mcp.ListResourceTemplatesResult]{
		method: mcp.MethodResourcesTemplatesList, kind: kindTemplates, key: listingKeyOf(mcp.MethodResourcesTemplatesList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, mc *mcpclient.Client) (*mcp.ListResourceTemplatesResult, error) {
			if page {
				return mc.ListResourceTemplatesByPage(ctx, req)
			}
			return mc.ListResourceTemplates(ctx, req)
		},
		hints: func(r *mcp.ListResourceTemplatesResult) (*int64, mcp.CacheScope) { return r.TTLMs, r.CacheScope },
		meta:  func(r *mcp.ListResourceTemplatesResult) **mcp.Meta { return &r.Meta },
		clone: func(r *mcp.ListResourceTemplatesResult) *mcp.ListResourceTemplatesResult {
			cp := *r
			cp.ResourceTemplates = slices.Clone(r.ResourceTemplates)
			return &cp
		},
		decode: decodeJSON[mcp.ListResourceTemplatesResult],
	}
}

// readSpec is resources/read's: keyed by the URI and the arguments.
func readSpec(req mcp.ReadResourceRequest) *listingSpec[*mcp.ReadResourceResult] {
	arg := req.Params.URI
	if len(req.Params.Arguments) > 0 {
		if raw, err := json.Marshal(req.Params.Arguments); err == nil { // map keys sorted
			arg += "\x00" + string(raw)
		}
	}
	return &listingSpec[*mcp.ReadResourceResult]{
		method: mcp.MethodResourcesRead, kind: kindRead, key: listingKey{method: string(mcp.MethodResourcesRead), arg: arg},
		fetch: func(ctx context.Context, mc *mcpclient.Client) (*mcp.ReadResourceResult, error) {
			return mc.ReadResource(ctx, req)
		},
		hints: func(r *mcp.ReadResourceResult) (*int64, mcp.CacheScope) { return r.TTLMs, r.CacheScope },
		meta:  func(r *mcp.ReadResourceResult) **mcp.Meta { return &r.Meta },
		clone: func(r *mcp.ReadResourceResult) *mcp.ReadResourceResult {
			cp := *r
			cp.Contents = slices.Clone(r.Contents)
			return &cp
		},
		decode: func(raw json.RawMessage) (*mcp.ReadResourceResult, error) { return mcp.ParseReadResourceResult(&raw) },
	}
}
