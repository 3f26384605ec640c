package testserver

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// CounterURI is the subscribable resource; it reads as the increment count.
const CounterURI = "test://counter"

// newMCPServer builds a fresh mcp-go server whose handlers count into s.
func newMCPServer(s *Server, cfg Config, subs *subscriptions) *server.MCPServer {
	opts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
		server.WithHooks(subs.hooks()),
	}
	if cfg.TaskTools {
		opts = append(opts, server.WithTaskCapabilities(true, true, true))
	}
	if cfg.PageSize > 0 {
		opts = append(opts, server.WithPaginationLimit(cfg.PageSize))
	}
	if cfg.CacheTTLMs > 0 {
		opts = append(opts, server.WithCacheHints(cfg.CacheTTLMs, cfg.CacheScope))
	}
	version := "1.0.0"
	if cfg.ServerVersion != "" {
		version = cfg.ServerVersion
	}
	m := server.NewMCPServer("resilientmcp-testserver", version, opts...)
	for _, t := range tools(s, cfg.Tools, cfg.ToolRan) {
		m.AddTool(t.Tool, t.Handler)
	}
	addPromptsAndTemplates(m)
	if cfg.TaskTools {
		addTaskTools(s, m)
	}
	m.AddTool(profileTool())
	if cfg.SchemaTools {
		addSchemaTool(s, m)
		addHeaderTool(s, m)
	}
	m.AddTool(mcp.NewTool("ask", append(hints(false, false),
		mcp.WithDescription("Asks the client's model (a server-initiated sampling request) and returns its answer."),
		mcp.WithString("prompt", mcp.Required()))...),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.counters.add(&s.counters.tools, "ask")
			prompt, err := req.RequireString("prompt")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			//lint:ignore SA1019 the ask tool tests the session era's server-initiated sampling
			res, err := m.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}},
				MaxTokens: 16,
			}})
			if err != nil {
				return mcp.NewToolResultError("sampling: " + err.Error()), nil
			}
			text, ok := res.Content.(mcp.TextContent)
			if !ok {
				return mcp.NewToolResultError("sampling answered no text"), nil
			}
			return mcp.NewToolResultText(text.Text), nil
		})
	m.AddResource(
		mcp.NewResource(CounterURI, "counter", mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			n := s.ToolRuns("increment")
			return []mcp.ResourceContents{mcp.TextResourceContents{
				URI: CounterURI, MIMEType: "text/plain", Text: strconv.FormatInt(n, 10),
			}}, nil
		})
	return m
}

// hints spells out every annotation: mcp.NewTool defaults to destructive
// and open-world, which would muddy retry-safety tests.
func hints(readOnly, idempotent bool) []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithReadOnlyHintAnnotation(readOnly),
		mcp.WithIdempotentHintAnnotation(idempotent),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	}
}

func tools(s *Server, set ToolSet, ran func(string, map[string]any)) []server.ServerTool {
	changed := set == ToolsChanged
	run := func(name string) int64 { return s.counters.add(&s.counters.tools, name) }
	tool := func(name string, h server.ToolHandlerFunc, opts ...mcp.ToolOption) server.ServerTool {
		return server.ServerTool{
			Tool: mcp.NewTool(name, opts...),
			Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if ran != nil {
					ran(name, req.GetArguments())
				}
				if name != "increment" { // increment counts itself to return the value
					run(name)
				}
				return h(ctx, req)
			},
		}
	}
	binary := func(op func(a, b float64) float64) server.ToolHandlerFunc {
		return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a, errA := req.RequireFloat("a")
			b, errB := req.RequireFloat("b")
			if errA != nil || errB != nil {
				return mcp.NewToolResultError("a and b must be numbers"), nil
			}
			return mcp.NewToolResultText(strconv.FormatFloat(op(a, b), 'f', -1, 64)), nil
		}
	}
	numbers := []mcp.ToolOption{
		mcp.WithNumber("a", mcp.Required()),
		mcp.WithNumber("b", mcp.Required()),
	}

	out := []server.ServerTool{
		tool("echo", func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		}, append(hints(true, true),
			mcp.WithDescription("Returns text."),
			mcp.WithString("text", mcp.Required()))...),

		tool("add", binary(func(a, b float64) float64 { return a + b }),
			append(hints(false, !changed), append(numbers, mcp.WithDescription("Returns a+b."))...)...),

		tool("increment", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strconv.FormatInt(run("increment"), 10)), nil
		}, append(hints(changed, false), mcp.WithDescription("Increments a counter and returns it."))...),

		tool("slow", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d := time.Duration(req.GetFloat("ms", 0) * float64(time.Millisecond))
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return mcp.NewToolResultText("done"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, append(hints(false, false),
			mcp.WithDescription("Sleeps ms milliseconds."),
			mcp.WithNumber("ms", mcp.Required()))...),
	}
	// progress and progressRead send n progress notifications ms apart,
	// then answer: their answer comes as an event stream, which a test can
	// cut halfway (F28). progress is neither read-only nor idempotent;
	// progressRead is read-only. Their work goes on when the client's
	// connection breaks, as a job's would, so that a server that keeps
	// events has the answer for a client that resumes the stream.
	progress := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx = context.WithoutCancel(ctx)
		n, every := req.GetInt("n", 0), time.Duration(req.GetFloat("ms", 0)*float64(time.Millisecond))
		srv := server.ServerFromContext(ctx)
		var token any = "progress"
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			token = req.Params.Meta.ProgressToken
		}
		for i := range n {
			if err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token, "progress": i + 1, "total": n,
			}); err != nil {
				return nil, err
			}
			select {
			case <-time.After(every):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return mcp.NewToolResultText("done"), nil
	}
	progressArgs := []mcp.ToolOption{
		mcp.WithDescription("Sends n progress notifications ms apart, then answers."),
		mcp.WithNumber("n", mcp.Required()), mcp.WithNumber("ms", mcp.Required()),
	}
	out = append(out,
		tool("progress", progress, append(hints(false, false), progressArgs...)...),
		tool("progressRead", progress, append(hints(true, true), progressArgs...)...),
		tool("work", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return work(ctx, s, req)
		}, append(hints(false, false),
			mcp.WithDescription("Reports progress (to the request's progressToken) n times ms apart, then answers; "+
				"with stallAfter ≥ 0 it goes silent after that many reports until cancelled (at most a minute). "+
				"Unlike progress, it stops when its request is cancelled, and counts that (WorkCancelled)."),
			mcp.WithNumber("n", mcp.Required()), mcp.WithNumber("ms", mcp.Required()), mcp.WithNumber("stallAfter"))...))
	if changed {
		out = append(out, tool("multiply", binary(func(a, b float64) float64 { return a * b }),
			append(hints(true, true), append(numbers, mcp.WithDescription("Returns a*b."))...)...))
	}
	return out
}

// subscriptions tracks who asked for resource updates. mcp-go v1.2.1 has no
// "resource updated" API: resources/subscribe is only acknowledged, and its
// broadcast filter drops notifications/resources/updated on
// subscriptions/listen streams. So both eras are tracked here via hooks.
type subscriptions struct {
	mu sync.Mutex
	// legacy: session id -> subscribed URIs (resources/subscribe).
	legacy map[string][]string
	// listeners: sessions serving a subscriptions/listen stream, with that
	// request's context, which ends with the stream.
	listeners map[server.ClientSession]context.Context
}

func newSubscriptions() *subscriptions {
	return &subscriptions{
		legacy:    map[string][]string{},
		listeners: map[server.ClientSession]context.Context{},
	}
}

func (u *subscriptions) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			u.mu.Lock()
			defer u.mu.Unlock()
			if !slices.Contains(u.legacy[cs.SessionID()], req.Params.URI) {
				u.legacy[cs.SessionID()] = append(u.legacy[cs.SessionID()], req.Params.URI)
			}
		}
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.legacy[cs.SessionID()] = slices.DeleteFunc(u.legacy[cs.SessionID()],
				func(v string) bool { return v == req.Params.URI })
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		u.mu.Lock()
		defer u.mu.Unlock()
		delete(u.legacy, cs.SessionID())
	})
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.listeners[cs] = ctx
		}
	})
	h.AddAfterSubscriptionsListen(func(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			u.mu.Lock()
			defer u.mu.Unlock()
			delete(u.listeners, cs)
		}
	})
	return h
}

// UpdateResource sends notifications/resources/updated for uri to every
// session subscribed to it: legacy sessions via resources/subscribe, and
// stateless-era clients via an open subscriptions/listen stream naming uri.
// Delivery is best effort (mcp-go drops it if a session's queue is full).
func (s *Server) UpdateResource(uri string) {
	s.mu.Lock()
	inst := s.inst
	s.mu.Unlock()
	if inst == nil {
		return
	}
	legacy, listeners := inst.subs.subscribers(uri)
	params := map[string]any{"uri": uri}
	for _, id := range legacy {
		_ = inst.mcp.SendNotificationToSpecificClient(id, mcp.MethodNotificationResourceUpdated, params)
	}
	note := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: mcp.MethodNotificationResourceUpdated,
			Params: mcp.NotificationParams{AdditionalFields: params},
		},
	}
	for _, cs := range listeners {
		// The transport's forwarder tags this with the subscription id.
		select {
		case cs.NotificationChannel() <- note:
		default:
		}
	}
}

// AnnounceListChanged sends method (notifications/tools/list_changed, or
// its prompts' or resources' sibling) to every session: those of the
// session era, and stateless-era clients with an open subscriptions/listen
// stream (mcp-go's transport passes it on if the stream's filter asks for
// it). Best effort, as UpdateResource.
func (s *Server) AnnounceListChanged(method string) {
	s.mu.Lock()
	inst := s.inst
	s.mu.Unlock()
	if inst == nil {
		return
	}
	inst.mcp.SendNotificationToAllClients(method, nil)
	inst.subs.mu.Lock()
	var listeners []server.ClientSession
	for cs, ctx := range inst.subs.listeners {
		if ctx.Err() == nil {
			listeners = append(listeners, cs)
		}
	}
	inst.subs.mu.Unlock()
	note := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method}}
	for _, cs := range listeners {
		select {
		case cs.NotificationChannel() <- note:
		default:
		}
	}
}

// subscribers snapshots who should hear about uri, dropping listen streams
// that have ended.
func (u *subscriptions) subscribers(uri string) (legacy []string, listeners []server.ClientSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, uris := range u.legacy {
		if slices.Contains(uris, uri) {
			legacy = append(legacy, id)
		}
	}
	for cs, ctx := range u.listeners {
		if ctx.Err() != nil {
			delete(u.listeners, cs)
			continue
		}
		fs, ok := cs.(server.SessionWithSubscriptionFilter)
		if !ok {
			continue
		}
		// The filter is what mcp-go actually established for this stream.
		if f, active := fs.SubscriptionFilter(); active && slices.Contains(f.ResourceSubscriptions, uri) {
			listeners = append(listeners, cs)
		}
	}
	return legacy, listeners
}

// work is the "work" tool: progress to the request's own token, n reports
// ms apart, a stall after stallAfter of them if asked, and a stop when the
// request is cancelled (notifications/cancelled, or its stream closed).
func work(ctx context.Context, s *Server, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n, every := req.GetInt("n", 0), time.Duration(req.GetFloat("ms", 0)*float64(time.Millisecond))
	stallAfter := req.GetInt("stallAfter", -1)
	var token any
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	srv := server.ServerFromContext(ctx)
	cancelled := func() (*mcp.CallToolResult, error) {
		s.counters.add(&s.counters.tools, "work.cancelled")
		return nil, ctx.Err()
	}
	for i := range n {
		if i == stallAfter {
			select {
			case <-ctx.Done():
				return cancelled()
			case <-time.After(time.Minute):
				return mcp.NewToolResultText("stalled"), nil
			}
		}
		if token != nil {
			if err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token, "progress": i + 1, "total": n, "message": "step " + strconv.Itoa(i+1),
			}); err != nil {
				return nil, err
			}
		}
		select {
		case <-time.After(every):
		case <-ctx.Done():
			return cancelled()
		}
	}
	return mcp.NewToolResultText("done " + strconv.Itoa(n)), nil
}
