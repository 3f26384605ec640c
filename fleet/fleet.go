package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// The _meta keys of each tool and prompt the fleet lists: the server it is
// routed to, and its own name there.
const (
	ServerMetaKey = "io.github.resilientmcp/server"
	NameMetaKey   = "io.github.resilientmcp/name"
)

// Retry schedule of a server that is not ready, and the reconnect schedule
// each server's client is given (client.WithBackOff) unless
// WithClientOptions sets its own. The cap is what a server that comes up
// waits at most before it is tried again: 2 s, so that it joins within a
// few seconds, while a server that stays down costs one refused connection
// (or one process start) each 2 s, which is nothing beside what an agent
// does between two turns.
const (
	retryInitial = 100 * time.Millisecond
	retryCap     = 2 * time.Second
	// connectTimeout bounds one attempt to reach a server, without its
	// config's timeout.
	connectTimeout = 30 * time.Second
	// coalesce is how long after a change the fleet waits for more before
	// it calls WithToolsChanged's function: a burst is one call. maxBurst
	// bounds the wait when changes never pause.
	coalesce = 50 * time.Millisecond
	maxBurst = time.Second
)

// ErrUnknownTool is a call to a tool name that no server lists (or that
// allowedTools or disabledTools leave out).
var ErrUnknownTool = errors.New("fleet: unknown tool")

// ErrUnknownPrompt is a prompt name that no server lists.
var ErrUnknownPrompt = errors.New("fleet: unknown prompt")

// ErrUnknownResource is a resource URI that no server lists.
var ErrUnknownResource = errors.New("fleet: unknown resource")

// ServerError is one server's failure: why it is not ready (Start's
// error joins one per required server), or the error of a call routed to
// it. Err keeps what the client said: errors.Is(err,
// client.ErrUnavailable) and the rest hold through it. A plain value.
type ServerError struct {
	Server string
	Err    error
}

func (e *ServerError) Error() string { return fmt.Sprintf("fleet: server %q: %v", e.Server, e.Err) }
func (e *ServerError) Unwrap() error { return e.Err }

// ServerStatus is one server as the fleet sees it. A plain value.
type ServerStatus struct {
	Name     string
	State    client.State // the client's; Idle before Start
	Required bool
	Tools    int  // tools listed (after allowedTools and disabledTools)
	Stale    bool // the tools are the last listing the server gave, not a current one
	Err      error
}

// Option configures a Fleet. Options are immutable values.
type Option func(*options)

type options struct {
	clientOptions func(server string) []client.Option
	toolName      func(server, tool string) string
	toolsChanged  func()
	resolve       Resolver
	logger        *slog.Logger
}

// WithClientOptions gives each server's client options of the caller's,
// after the fleet's own (which they override): an observer, a listing
// store, a backoff, WithFailFastAfter...
func WithClientOptions(f func(server string) []client.Option) Option {
	return func(o *options) { o.clientOptions = f }
}

// WithToolName names the server's tool (and prompt) in the merged list.
// Default DefaultToolName. Names longer than MaxNameLen, or that two items
// share, are cut and end in a hash of the server and the item.
func WithToolName(f func(server, tool string) string) Option {
	return func(o *options) { o.toolName = f }
}

// WithToolsChanged calls f, on a goroutine of the fleet's, once after each
// burst of changes to the merged list of tools: a server reached for the
// first time, one that sent tools/list_changed, one back with another list.
func WithToolsChanged(f func()) Option {
	return func(o *options) { o.toolsChanged = f }
}

// WithResolver resolves references of schemes other than env and value:
// ${input:id}, ${op://...}. It is asked at Start, with Start's context, and
// again whenever a server that failed is tried again.
func WithResolver(r Resolver) Option {
	return func(o *options) { o.resolve = r }
}

// WithLogger logs the fleet's servers coming up and going down, and is
// each server's client's logger (with attribute server=<name>). Secrets
// are never logged. Default: nothing is logged, as the client's default.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// Fleet is all of an agent's servers, each behind a client.ResilientClient,
// with their tools, prompts and resources merged and calls routed. One
// server failing never fails the others: its tools are listed from its last
// listing (Stale), and calls to them fail at once with client.ErrUnavailable
// while it is down; it is tried again in the background.
//
// Names: a tool is listed as WithToolName(server, tool), by default
// "<server>__<tool>". A name longer than MaxNameLen, or one that two tools
// share, is cut and ends in "_" and a hash of the server and the tool, so
// that it depends only on them and on which names collide, never on the
// order servers answered in.
//
// A Fleet is safe for concurrent use by any number of goroutines.
type Fleet struct {
	opts    options
	members map[string]*member // fixed by New
	names   []string           // members' names, sorted

	ctx    context.Context // the background goroutines'; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Lock order: Fleet.mu, then member.mu.
	mu         sync.Mutex
	started    bool
	closed     bool
	tools      []mcp.Tool     // the merged list
	routes     map[string]key // tool name → server and its own name
	prompts    map[string]key // prompt name → server and its own name
	resources  map[string]string
	notify     *time.Timer    // WithToolsChanged's, while a burst is on
	burstStart time.Time      // the burst's first change
	notifying  sync.WaitGroup // the notify timer's function, armed or running
}

// member is one server of the fleet.
type member struct {
	name     string
	cfg      ServerConfig
	required bool

	first   chan struct{} // closed after the first attempt
	readyCh chan struct{} // closed when first ready
	refresh chan struct{} // list again (tools/list_changed); 1 buffered

	// mu guards the fields below.
	mu       sync.Mutex
	client   *client.ResilientClient
	ready    bool       // listed its tools at least once
	listed   []mcp.Tool // the last listing, filtered
	stale    bool
	err      error
	firstErr error // the first failure of a server never ready, which later ones may hide
	// The last prompts and resources listed (prompts.go).
	prompts   []mcp.Prompt
	resources []mcp.Resource
}

// New checks cfg and returns a Fleet of its enabled servers. Like
// client.New it does no I/O: Start connects them.
func New(cfg Config, opts ...Option) (*Fleet, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	f := &Fleet{members: map[string]*member{}}
	for _, o := range opts {
		o(&f.opts)
	}
	if f.opts.toolName == nil {
		f.opts.toolName = DefaultToolName
	}
	if f.opts.logger == nil {
		f.opts.logger = slog.New(slog.DiscardHandler)
	}
	for name, s := range cfg.Servers {
		if s.Disabled {
			continue
		}
		f.members[name] = &member{name: name, cfg: s, required: s.Required,
			first: make(chan struct{}), readyCh: make(chan struct{}), refresh: make(chan struct{}, 1)}
	}
	f.names = slices.Sorted(maps.Keys(f.members))
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f, nil
}

// Start connects every enabled server in parallel: initialize (by the
// client, with its identity), then tools/list. It returns once every
// server is ready or has failed its first attempt, and every required
// server is ready, or ctx has ended. The error
// is errors.Join of a *ServerError for each required server not ready; an
// optional server that failed is not an error, and is tried again in the
// background (Status says why it is not ready). Start is called once.
func (f *Fleet) Start(ctx context.Context) error {
	f.mu.Lock()
	if f.started || f.closed {
		f.mu.Unlock()
		return errors.New("fleet: Start called twice, or after Close")
	}
	f.started = true
	f.mu.Unlock()
	for _, name := range f.names {
		m := f.members[name]
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.run(ctx, m)
		}()
	}
	var errs []error
	for _, name := range f.names {
		m := f.members[name]
		wait := m.first
		if m.required {
			wait = m.readyCh
		}
		select {
		case <-wait:
		case <-ctx.Done():
		}
		m.mu.Lock()
		ready, err := m.ready, m.err
		m.mu.Unlock()
		if m.required && !ready {
			if err == nil {
				err = ctx.Err()
			}
			errs = append(errs, &ServerError{Server: name, Err: err})
		}
	}
	return errors.Join(errs...)
}

// run is a member's life: the first attempt (within Start's ctx), then
// attempts on the backoff until it is ready, then a listing again on each
// tools/list_changed, until Close.
func (f *Fleet) run(startCtx context.Context, m *member) {
	sched := retrySchedule()
	for attempt := 0; ; attempt++ {
		ctx, cancel := f.attemptContext(startCtx, m, attempt == 0)
		err := f.connect(ctx, m, attempt == 0)
		cancel()
		if attempt == 0 {
			close(m.first)
		}
		if err == nil {
			break
		}
		if f.ctx.Err() != nil {
			return
		}
		if attempt == 0 {
			f.opts.logger.Warn("fleet: server not ready; trying again in the background", "server", m.name, "err", err)
		}
		select {
		case <-time.After(sched.NextBackOff()):
		case <-f.ctx.Done():
			return
		}
	}
	close(m.readyCh)
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-m.refresh:
			ctx, cancel := context.WithTimeout(f.ctx, m.timeout())
			_, err := f.list(ctx, m, false)
			cancel()
			if err != nil && f.ctx.Err() == nil {
				f.opts.logger.Warn("fleet: listing tools after tools/list_changed", "server", m.name, "err", err)
			}
		}
	}
}

// attemptContext is an attempt's context: the fleet's (ended by Close),
// within the server's timeout; the first is ended by Start's ctx too.
func (f *Fleet) attemptContext(startCtx context.Context, m *member, first bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(f.ctx, m.timeout())
	if !first {
		return ctx, cancel
	}
	stop := context.AfterFunc(startCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (m *member) timeout() time.Duration {
	if m.cfg.Timeout > 0 {
		return m.cfg.Timeout
	}
	return connectTimeout
}

func retrySchedule() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.Multiplier, b.MaxInterval, b.MaxElapsedTime = retryInitial, 1.6, retryCap, 0
	b.Reset()
	return b
}

// connect makes the member's client if it has none, then lists its tools:
// the client opens and initializes a session for it. The first attempt
// fails fast (one dial, or one process start); later ones wait within ctx
// for the client's reconnect loop, on the fleet's schedule.
func (f *Fleet) connect(ctx context.Context, m *member, first bool) error {
	m.mu.Lock()
	c := m.client
	m.mu.Unlock()
	fail := func(err error) error {
		m.mu.Lock()
		m.err = err
		if m.firstErr == nil && !m.ready {
			m.firstErr = err
		}
		m.mu.Unlock()
		return err
	}
	if c == nil {
		var err error
		c, err = f.newClient(ctx, m)
		if err != nil {
			return fail(err)
		}
		m.mu.Lock()
		if f.ctx.Err() != nil { // Close is under way, and would miss it
			m.mu.Unlock()
			_ = c.Close()
			return fail(client.ErrClosed)
		}
		m.client = c
		m.mu.Unlock()
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationToolsListChanged) {
				select {
				case m.refresh <- struct{}{}:
				default:
				}
			}
		})
		// No Initialize of the fleet's: the client initializes each session
		// it opens, with its own identity (client.WithClientInfo, which
		// WithClientOptions may give), and a request of ours would replace
		// it.
	}
	if _, err := f.list(ctx, m, first); err != nil {
		return fail(err)
	}
	m.mu.Lock()
	m.ready, m.err, m.firstErr = true, nil, nil
	m.mu.Unlock()
	f.opts.logger.Info("fleet: server ready", "server", m.name)
	return nil
}

// newClient makes the member's client: its config expanded (the resolver
// asked), with the fleet's options and then the caller's.
func (f *Fleet) newClient(ctx context.Context, m *member) (*client.ResilientClient, error) {
	x := &expander{ctx: ctx, lookup: envLookup, resolve: f.opts.resolve}
	s, err := m.cfg.expand(m.name, x)
	if err != nil {
		return nil, err
	}
	opts := []client.Option{
		client.WithLogger(f.opts.logger.With("server", m.name)),
		client.WithServerName(m.name),
		client.WithBackOff(retrySchedule),
	}
	if s.KeepAlive > 0 {
		opts = append(opts, client.WithKeepAlive(s.KeepAlive))
	}
	if s.Timeout > 0 {
		opts = append(opts, client.WithCallTimeout(s.Timeout))
	}
	if s.PoolSize > 0 {
		opts = append(opts, client.WithPoolSize(s.PoolSize))
	}
	t, _ := s.transport()
	if t == transportStdio {
		env := make([]string, 0, len(s.Env))
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			env = append(env, k+"="+s.Env[k])
		}
		if len(env) > 0 {
			opts = append(opts, client.WithStdioEnv(env...))
		}
		if s.Cwd != "" {
			opts = append(opts, client.WithStdioDir(s.Cwd))
		}
	} else {
		if len(s.Headers) > 0 {
			opts = append(opts, client.WithHeaders(s.Headers))
		}
		if s.OAuth != nil {
			opts = append(opts, client.WithOAuth(client.OAuthConfig{
				ClientID: s.OAuth.ClientID, Scopes: s.OAuth.Scopes, RedirectURI: s.OAuth.RedirectURI,
			}))
		}
	}
	if f.opts.clientOptions != nil {
		opts = append(opts, f.opts.clientOptions(m.name)...)
	}
	c, err := newTransportClient(t, s, opts)
	if err != nil {
		return nil, &ConfigError{Server: m.name, Err: err}
	}
	return c, nil
}

// newTransportClient is the one place a type becomes a constructor.
func newTransportClient(t string, s ServerConfig, opts []client.Option) (*client.ResilientClient, error) {
	switch t {
	case transportStdio:
		return client.NewStdio(s.Command, s.Args, opts...)
	case transportHTTP:
		return client.New(s.URL, opts...)
	case transportSSE:
		return client.NewSSE(s.URL, opts...)
	}
	return nil, fmt.Errorf("type %q: no constructor", t)
}

// list lists the member's tools. A failure keeps the last listing, marked
// stale; so does a listing the client served stale. It reports whether the
// member's tools changed (or it was listed for the first time), and if so
// rebuilds the merged list and tells WithToolsChanged's function: whoever
// listed, the fleet on its own or a caller's ListTools.
func (f *Fleet) list(ctx context.Context, m *member, failFast bool) (changed bool, err error) {
	m.mu.Lock()
	c := m.client
	m.mu.Unlock()
	if c == nil {
		return false, errors.New("fleet: not connected")
	}
	if failFast {
		ctx = client.WithCallOptions(ctx, client.FailFast())
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	m.mu.Lock()
	if err != nil {
		m.stale = m.ready
		m.err = err
		m.mu.Unlock()
		return false, err
	}
	tools := m.cfg.filter(res.Tools)
	age, stale := client.Stale(res.Meta)
	changed = !m.ready || !sameTools(m.listed, tools)
	m.listed, m.stale = tools, stale
	switch {
	case stale:
		m.err = fmt.Errorf("%w: the server did not answer tools/list; its listing of %v ago is served", client.ErrUnavailable, age.Round(time.Millisecond))
	case m.ready:
		m.err = nil
	}
	m.mu.Unlock()
	if changed {
		f.rebuild()
		f.changed()
	}
	return changed, nil
}

func (s ServerConfig) filter(tools []mcp.Tool) []mcp.Tool {
	if len(s.AllowedTools) == 0 && len(s.DisabledTools) == 0 {
		return tools
	}
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if len(s.AllowedTools) > 0 && !slices.Contains(s.AllowedTools, t.Name) || slices.Contains(s.DisabledTools, t.Name) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func sameTools(a, b []mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || fmt.Sprint(a[i].InputSchema) != fmt.Sprint(b[i].InputSchema) {
			return false
		}
	}
	return true
}

// rebuild makes the merged list and the routes from every member's last
// listing.
func (f *Fleet) rebuild() {
	type entry struct {
		tool mcp.Tool
		k    key
	}
	var entries []entry
	var keys []key
	for _, name := range f.names {
		m := f.members[name]
		m.mu.Lock()
		for _, t := range m.listed {
			k := key{server: name, name: t.Name}
			entries = append(entries, entry{t, k})
			keys = append(keys, k)
		}
		m.mu.Unlock()
	}
	routes := assignNames(keys, f.opts.toolName)
	names := make(map[key]string, len(routes))
	for n, k := range routes {
		names[k] = n
	}
	tools := make([]mcp.Tool, 0, len(entries))
	for _, e := range entries {
		t := e.tool
		t.Name = names[e.k]
		t.Meta = withOrigin(t.Meta, e.k)
		tools = append(tools, t)
	}
	slices.SortFunc(tools, func(a, b mcp.Tool) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	f.mu.Lock()
	f.tools, f.routes = tools, routes
	f.mu.Unlock()
}

// withOrigin is meta with the server's and the item's own name added.
func withOrigin(meta *mcp.Meta, k key) *mcp.Meta {
	fields := map[string]any{}
	if meta != nil {
		maps.Copy(fields, meta.AdditionalFields)
	}
	fields[ServerMetaKey] = k.server
	fields[NameMetaKey] = k.name
	out := &mcp.Meta{AdditionalFields: fields}
	if meta != nil {
		out.ProgressToken = meta.ProgressToken
	}
	return out
}

// changed calls WithToolsChanged's function once the burst it is part of
// is over: coalesce after the last change, or, for changes that never
// pause, maxBurst after the first.
func (f *Fleet) changed() {
	if f.opts.toolsChanged == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	if t := f.notify; t != nil {
		if time.Since(f.burstStart) >= maxBurst {
			return // it fires within coalesce, this change made
		}
		if t.Stop() {
			t.Reset(coalesce)
			return
		}
		// It is firing, perhaps before this change: another follows.
	}
	f.burstStart = time.Now()
	f.notifying.Add(1)
	var t *time.Timer
	t = time.AfterFunc(coalesce, func() {
		defer f.notifying.Done()
		f.mu.Lock()
		if f.notify == t {
			f.notify = nil
		}
		closed := f.closed
		f.mu.Unlock()
		if !closed {
			f.opts.toolsChanged()
		}
	})
	f.notify = t
}

// ListTools lists every server's tools, merged and named (see Fleet). Each
// server that was listed before is asked again, in parallel, failing fast;
// one that cannot answer keeps its last listing, marked Stale in Status.
// It fails only when no server has anything to list.
func (f *Fleet) ListTools(ctx context.Context) (*mcp.ListToolsResult, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(f.names))
	for i, name := range f.names {
		m := f.members[name]
		if _, err := m.usable(); err != nil {
			errs[i] = err
			continue
		}
		wg.Go(func() {
			if _, err := f.list(ctx, m, true); err != nil {
				errs[i] = &ServerError{Server: name, Err: err}
			}
		})
	}
	wg.Wait()
	f.mu.Lock()
	tools := slices.Clone(f.tools)
	f.mu.Unlock()
	if len(tools) == 0 {
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return &mcp.ListToolsResult{Tools: tools}, nil
}

// CallTool calls the tool req names, on its server, under its own name. A
// server that is not ready fails the call at once with
// client.ErrUnavailable wrapping why; so does one the client finds down
// (client.FailFast). A name no server lists is ErrUnknownTool. Errors
// from a server are *ServerError, wrapping the client's.
func (f *Fleet) CallTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	k, ok := f.routes[req.Params.Name]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, req.Params.Name)
	}
	m := f.members[k.server]
	c, err := m.usable()
	if err != nil {
		return nil, err
	}
	req.Params.Name = k.name
	res, err := c.CallTool(client.WithCallOptions(ctx, client.FailFast()), req)
	if err != nil {
		return nil, &ServerError{Server: m.name, Err: err}
	}
	return res, nil
}

// usable is the member's client, or, if it is not ready, an error
// ErrUnavailable wrapping why.
func (m *member) usable() (*client.ResilientClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.client == nil || !m.ready {
		cause := m.err
		if cause == nil {
			cause = errors.New("not connected yet")
		}
		return nil, &ServerError{Server: m.name, Err: fmt.Errorf("%w: %w", client.ErrUnavailable, cause)}
	}
	return m.client, nil
}

// Client is the named server's client, once Start has made it.
func (f *Fleet) Client(name string) (*client.ResilientClient, bool) {
	m, ok := f.members[name]
	if !ok {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.client, m.client != nil
}

// Status is every enabled server's, sorted by name.
func (f *Fleet) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(f.names))
	for _, name := range f.names {
		m := f.members[name]
		m.mu.Lock()
		st := ServerStatus{Name: name, Required: m.required, Tools: len(m.listed), Stale: m.stale, Err: m.err}
		if m.firstErr != nil && m.err != nil && m.firstErr.Error() != m.err.Error() {
			// A stdio server that cannot start is a crash loop after a few
			// tries: the first failure said why.
			st.Err = fmt.Errorf("%w (first failure: %w)", m.err, m.firstErr)
		}
		c := m.client
		m.mu.Unlock()
		if c != nil {
			st.State = c.State()
		}
		out = append(out, st)
	}
	return out
}

// Close ends every server, in parallel, and the fleet's goroutines, and
// returns once they have ended (stdio servers' processes reaped). Its
// error joins the clients'.
func (f *Fleet) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	if f.notify != nil && f.notify.Stop() {
		f.notifying.Done()
	}
	f.notify = nil
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
	f.notifying.Wait()
	var wg sync.WaitGroup
	errs := make([]error, len(f.names))
	for i, name := range f.names {
		m := f.members[name]
		m.mu.Lock()
		c := m.client
		m.mu.Unlock()
		if c == nil {
			continue
		}
		wg.Go(func() {
			if err := c.Close(); err != nil && !errors.Is(err, client.ErrClosed) {
				errs[i] = &ServerError{Server: name, Err: err}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
