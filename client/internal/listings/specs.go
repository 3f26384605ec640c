package listings

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// How each listing and read is cached (Get): its key, and its result's
// fields.

// Spec is how one method is cached: what it is, how it is asked,
// and how its result is handled.
type Spec[T any] struct {
	method mcp.MCPMethod
	kind   kind
	key    key
	fetch  func(context.Context, Host, Session) (T, error)
	// hints are the SEP-2549 fields of a result; meta its _meta's
	// pointer, to mark a copy.
	hints func(T) (*int64, mcp.CacheScope)
	meta  func(T) **mcp.Meta
	// clone is a copy of a result that the caller may change at its top
	// level (its lists); what the lists hold is shared.
	clone  func(T) T
	decode func(json.RawMessage) (T, error)
	// remember, if set, runs with a fresh answer under Cache.mu, with
	// the change count the listing began with: tools/list's fills the
	// replay decision's tools.
	remember func(res T, gen uint64)
}

func keyOf(method mcp.MCPMethod, page bool, cursor mcp.Cursor) key {
	return key{method: string(method), page: page, arg: string(cursor)}
}

func decodeJSON[T any](raw json.RawMessage) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	return v, nil
}

// ToolsSpec is tools/list's: its answers are the tools the replay decision
// reads (rememberToolsLocked), in the same cache.
func (l *Cache) ToolsSpec(req mcp.ListToolsRequest, page bool) *Spec[*mcp.ListToolsResult] {
	complete := !page && req.Params.Cursor == ""
	return &Spec[*mcp.ListToolsResult]{
		method: mcp.MethodToolsList, kind: kindTools, key: keyOf(mcp.MethodToolsList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, h Host, s Session) (*mcp.ListToolsResult, error) {
			return h.ListTools(ctx, s.MC, req, page)
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
			l.rememberToolsLocked(r.Tools, complete, gen)
		},
	}
}

// PromptsSpec is prompts/list's.
func PromptsSpec(req mcp.ListPromptsRequest, page bool) *Spec[*mcp.ListPromptsResult] {
	return &Spec[*mcp.ListPromptsResult]{
		method: mcp.MethodPromptsList, kind: kindPrompts, key: keyOf(mcp.MethodPromptsList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, _ Host, s Session) (*mcp.ListPromptsResult, error) {
			if page {
				return s.MC.ListPromptsByPage(ctx, req)
			}
			return s.MC.ListPrompts(ctx, req)
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

// ResourcesSpec is resources/list's.
func ResourcesSpec(req mcp.ListResourcesRequest, page bool) *Spec[*mcp.ListResourcesResult] {
	return &Spec[*mcp.ListResourcesResult]{
		method: mcp.MethodResourcesList, kind: kindResources, key: keyOf(mcp.MethodResourcesList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, _ Host, s Session) (*mcp.ListResourcesResult, error) {
			if page {
				return s.MC.ListResourcesByPage(ctx, req)
			}
			return s.MC.ListResources(ctx, req)
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

// TemplatesSpec is resources/templates/list's.
func TemplatesSpec(req mcp.ListResourceTemplatesRequest, page bool) *Spec[*mcp.ListResourceTemplatesResult] {
	return &Spec[*mcp.ListResourceTemplatesResult]{
		method: mcp.MethodResourcesTemplatesList, kind: kindTemplates, key: keyOf(mcp.MethodResourcesTemplatesList, page, req.Params.Cursor),
		fetch: func(ctx context.Context, _ Host, s Session) (*mcp.ListResourceTemplatesResult, error) {
			if page {
				return s.MC.ListResourceTemplatesByPage(ctx, req)
			}
			return s.MC.ListResourceTemplates(ctx, req)
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

// ReadSpec is resources/read's: keyed by the URI and the arguments.
func ReadSpec(req mcp.ReadResourceRequest) *Spec[*mcp.ReadResourceResult] {
	arg := req.Params.URI
	if len(req.Params.Arguments) > 0 {
		if raw, err := json.Marshal(req.Params.Arguments); err == nil { // map keys sorted
			arg += "\x00" + string(raw)
		}
	}
	return &Spec[*mcp.ReadResourceResult]{
		method: mcp.MethodResourcesRead, kind: kindRead, key: key{method: string(mcp.MethodResourcesRead), arg: arg},
		fetch: func(ctx context.Context, _ Host, s Session) (*mcp.ReadResourceResult, error) {
			return s.MC.ReadResource(ctx, req)
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
