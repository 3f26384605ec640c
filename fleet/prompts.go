package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// Prompts are merged and routed as tools are, under the same names
// (WithToolName); resources keep their URIs and are routed to the server
// that listed them. Both are listed when asked, not at Start, and a server
// that cannot answer keeps its last listing.

// ListPrompts lists every ready server's prompts, named as tools are.
// It fails only when no server has a prompt to list and one failed.
func (f *Fleet) ListPrompts(ctx context.Context) (*mcp.ListPromptsResult, error) {
	errs := f.eachReady(ctx, func(ctx context.Context, m *member, c *client.ResilientClient) error {
		if c.GetServerCapabilities().Prompts == nil {
			return nil
		}
		res, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.prompts = res.Prompts
		m.mu.Unlock()
		return nil
	})
	var keys []key
	var prompts []mcp.Prompt
	for _, name := range f.names {
		m := f.members[name]
		m.mu.Lock()
		for _, p := range m.prompts {
			keys = append(keys, key{server: name, name: p.Name})
			prompts = append(prompts, p)
		}
		m.mu.Unlock()
	}
	routes := assignNames(keys, f.opts.toolName)
	names := make(map[key]string, len(routes))
	for n, k := range routes {
		names[k] = n
	}
	for i := range prompts {
		k := keys[i]
		prompts[i].Name = names[k]
		prompts[i].Meta = withOrigin(prompts[i].Meta, k)
	}
	slices.SortFunc(prompts, func(a, b mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
	f.mu.Lock()
	f.prompts = routes
	f.mu.Unlock()
	if len(prompts) == 0 {
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return &mcp.ListPromptsResult{Prompts: prompts}, nil
}

// GetPrompt gets the prompt req names from its server, under its own
// name. A name no server lists is ErrUnknownPrompt; a server that is not
// ready fails it at once with client.ErrUnavailable.
func (f *Fleet) GetPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	k, ok := f.route(ctx, func() (key, bool) { k, ok := f.prompts[req.Params.Name]; return k, ok }, f.listPrompts)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownPrompt, req.Params.Name)
	}
	m := f.members[k.server]
	c, err := m.usable()
	if err != nil {
		return nil, err
	}
	req.Params.Name = k.name
	res, err := c.GetPrompt(client.WithCallOptions(ctx, client.FailFast()), req)
	if err != nil {
		return nil, &ServerError{Server: m.name, Err: err}
	}
	return res, nil
}

// ListResources lists every ready server's resources, with their own
// URIs. Where two servers list one URI, the first by name serves it.
func (f *Fleet) ListResources(ctx context.Context) (*mcp.ListResourcesResult, error) {
	errs := f.eachReady(ctx, func(ctx context.Context, m *member, c *client.ResilientClient) error {
		if c.GetServerCapabilities().Resources == nil {
			return nil
		}
		res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.resources = res.Resources
		m.mu.Unlock()
		return nil
	})
	routes := map[string]string{}
	var resources []mcp.Resource
	for _, name := range f.names {
		m := f.members[name]
		m.mu.Lock()
		for _, r := range m.resources {
			if _, taken := routes[r.URI]; taken {
				continue
			}
			routes[r.URI] = name
			r.Meta = withOrigin(r.Meta, key{server: name, name: r.Name})
			resources = append(resources, r)
		}
		m.mu.Unlock()
	}
	f.mu.Lock()
	f.resources = routes
	f.mu.Unlock()
	if len(resources) == 0 {
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return &mcp.ListResourcesResult{Resources: resources}, nil
}

// ReadResource reads req's URI from the server that listed it.
// A URI no server lists is ErrUnknownResource.
func (f *Fleet) ReadResource(ctx context.Context, req mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	k, ok := f.route(ctx, func() (key, bool) { s, ok := f.resources[req.Params.URI]; return key{server: s}, ok }, f.listResources)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownResource, req.Params.URI)
	}
	m := f.members[k.server]
	c, err := m.usable()
	if err != nil {
		return nil, err
	}
	res, err := c.ReadResource(client.WithCallOptions(ctx, client.FailFast()), req)
	if err != nil {
		return nil, &ServerError{Server: m.name, Err: err}
	}
	return res, nil
}

func (f *Fleet) listPrompts(ctx context.Context)   { _, _ = f.ListPrompts(ctx) }
func (f *Fleet) listResources(ctx context.Context) { _, _ = f.ListResources(ctx) }

// route looks up a name (under f.mu); one not found, the listing is made
// again once (a caller need not list first), and it is looked up again.
func (f *Fleet) route(ctx context.Context, lookup func() (key, bool), list func(context.Context)) (key, bool) {
	f.mu.Lock()
	k, ok := lookup()
	f.mu.Unlock()
	if ok {
		return k, true
	}
	list(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	return lookup()
}

// eachReady runs do for each ready server's client, in parallel, failing
// fast; it returns their errors, each a *ServerError.
func (f *Fleet) eachReady(ctx context.Context, do func(context.Context, *member, *client.ResilientClient) error) []error {
	ctx = client.WithCallOptions(ctx, client.FailFast())
	errs := make([]error, len(f.names))
	var wg sync.WaitGroup
	for i, name := range f.names {
		m := f.members[name]
		c, err := m.usable()
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Go(func() {
			if err := do(ctx, m, c); err != nil {
				errs[i] = &ServerError{Server: name, Err: err}
			}
		})
	}
	wg.Wait()
	return errs
}
