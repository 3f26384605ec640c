// Package testserver runs a real mcp-go Streamable HTTP server on 127.0.0.1
// for end-to-end tests of a resilient MCP client. The server can be stopped
// and started again on the same address, can inject HTTP-level faults, and
// counts what it executed.
package testserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Era selects which protocol revisions the server offers.
type Era int

const (
	// SessionEra offers only the session-based revisions (<= 2025-11-25) and
	// validates session ids, so after a restart an old Mcp-Session-Id gets
	// HTTP 404.
	SessionEra Era = iota
	// StatelessEra uses mcp-go's default transport options: it advertises
	// 2026-07-28, so mcp-go's client negotiates the stateless era
	// (server/discover, no session).
	StatelessEra
)

// String returns the constant's name.
func (e Era) String() string {
	switch e {
	case SessionEra:
		return "SessionEra"
	case StatelessEra:
		return "StatelessEra"
	}
	return "Era(" + strconv.Itoa(int(e)) + ")"
}

// ToolSet selects the tools the server registers.
type ToolSet int

const (
	// ToolsDefault registers echo (read-only), add (idempotent, not
	// read-only), increment and slow (neither).
	ToolsDefault ToolSet = iota
	// ToolsChanged models a server that changed its tools across a restart:
	// echo (read-only), add (now neither idempotent nor read-only), increment
	// (now read-only), slow, and a new tool multiply.
	ToolsChanged
)

// Config describes the server built by the next Start.
type Config struct {
	Era   Era     // which protocol revisions the server offers
	Tools ToolSet // which tools it registers
	// SessionIdleTTL is passed to server.WithSessionIdleTTL; 0 turns it off.
	SessionIdleTTL time.Duration
	// DeclineGET answers every HTTP GET with 405 before it reaches mcp-go.
	DeclineGET bool
	// MalformedDiscover emulates an older session-era server that answers
	// unknown methods generically: a JSON-RPC server/discover POST gets
	// HTTP 200 {"jsonrpc":"2.0","id":<id>,"result":{}}; everything else goes
	// to a SessionEra mcp-go server (Era is ignored).
	MalformedDiscover bool
	// NoHandshake emulates a server of the stateless era only, which no
	// longer takes the session era's handshake: a JSON-RPC initialize POST
	// gets the JSON-RPC error "method not found"; everything else goes to a
	// StatelessEra mcp-go server (Era is ignored).
	NoHandshake bool
	// ExpiredSession400 answers a request carrying an Mcp-Session-Id this
	// generation did not hand out as the TypeScript SDK's servers do (and
	// @modelcontextprotocol/server-everything): 400 with the JSON-RPC
	// error -32000 "Bad Request: No valid session ID provided", where
	// mcp-go answers 404.
	ExpiredSession400 bool
	// EventStore keeps the events of every stream (server.WithEventStore),
	// so that a client can resume a broken stream with Last-Event-ID.
	EventStore bool
	// NotMCP answers every request with 200 text/html "<html>hello</html>".
	NotMCP bool
	// PageSize, if positive, is how many items each page of tools/list,
	// prompts/list, resources/list and resources/templates/list holds
	// (server.WithPaginationLimit).
	PageSize int
	// RequireToken, if non-empty, answers any request lacking
	// "Authorization: Bearer <token>" with 401 and WWW-Authenticate: Bearer.
	RequireToken string
	// RecordMeta keeps the params._meta of every message received, for
	// ReceivedMeta. Off, they are not decoded a second time (mcp-go
	// decodes them once), and benchmarks pay nothing for them.
	RecordMeta bool
	// Guard, if set, wraps every request before it reaches the server: an
	// authorization layer such as authserver.Protect (which serves the
	// protected resource metadata and answers 401/403 itself). It is called
	// once per generation, so it survives Restart; requests it refuses are
	// not counted by HTTPRequests or RPCs. A guard that needs URL (as
	// Protect does) cannot exist before Start has picked the port: Start
	// without it, then Reconfigure with it and Restart.
	Guard func(next http.Handler) http.Handler
	// ToolRan, if set, is called as each tool's handler begins, with the
	// call's arguments: a process that serves as one replica of several
	// records its executions where its parent can count them.
	ToolRan func(tool string, args map[string]any)
	// TLS, if set, serves HTTPS with this config (its certificates), and
	// HTTP/2 to a client that offers it by ALPN; URL then says https. It
	// is read by every Start, so a restart serves TLS too.
	TLS *tls.Config
	// TaskTools registers the task tools research (taskSupport required)
	// and crunch (optional), and mcp-go's tasks capability: see
	// tasktools.go.
	TaskTools bool
	// SlowInitialize, if positive, is how long the server takes to answer
	// initialize, as frameworks that wait for the client's capabilities
	// first do: each initialize POST waits this long (or until the
	// request ends) before mcp-go handles it.
	SlowInitialize time.Duration
	// CacheTTLMs, if positive, is the SEP-2549 ttlMs the server gives its
	// listings and reads (server.WithCacheHints), with CacheScope ("":
	// private). mcp-go gives them to 2026-07-28 requests only.
	CacheTTLMs int64
	CacheScope mcp.CacheScope
	// ServerVersion, if set, is the version in the server's serverInfo
	// (default "1.0.0"): a restart with another is another server.
	ServerVersion string
	// ServerWideTasks (with TaskTools) keeps the tasks of the task tools
	// in the Server's own store, which outlives sessions and restarts,
	// rather than in mcp-go's (one generation, bound to the session).
	ServerWideTasks bool
	// SchemaTools registers the tool shape, whose schemas use keywords of
	// JSON Schema 2020-12 that mcp-go's typed schema drops
	// (ShapeInputSchema, ShapeOutputSchema), and the tool route, whose
	// region argument is mirrored in the Mcp-Param-Region header.
	SchemaTools bool
}

// errClosed is returned by Start after Close.
var errClosed = errors.New("testserver: closed")

// Listen retries are bounded: restarting on the same port normally succeeds
// at once (Go sets SO_REUSEADDR), but a port can be momentarily busy.
const (
	listenAttempts = 50
	listenBackoff  = 20 * time.Millisecond
	// stopWait bounds how long Stop waits for in-flight handlers; they all
	// honour the request context, so this only matters if one is broken.
	stopWait = 5 * time.Second
)

// Server is a restartable mcp-go Streamable HTTP server with fault injection
// and execution counters. It is safe for concurrent use.
type Server struct {
	addr string // fixed by the first listen, never changes

	// lifeMu serialises Start, Stop and Close so that a listener is never
	// opened while the previous one is still being torn down.
	lifeMu sync.Mutex

	mu     sync.Mutex // guards the fields below
	cfg    Config
	inst   *instance // nil while stopped
	closed bool

	faults   faults
	counters counters
	tasks    tasks
	taskWork taskWork // the task tools' runs, which Close ends and waits for
	sessions sessions
	// token, when set, replaces Config.RequireToken at once: every token
	// but this one is refused from now on (SetToken).
	token     atomic.Pointer[string]
	onRefused atomic.Pointer[func()]
}

// OnRefused has f called for every request refused for its token (401),
// as it is refused.
func (s *Server) OnRefused(f func()) { s.onRefused.Store(&f) }

// SetToken makes the server accept "Authorization: Bearer token" and refuse
// every other with 401 from now on, across restarts: as an authorization
// server that rotated or revoked tokens would have it.
func (s *Server) SetToken(token string) { s.token.Store(&token) }

// requiredToken is the token requests must carry, "" for none.
func (s *Server) requiredToken(cfg Config) string {
	if t := s.token.Load(); t != nil {
		return *t
	}
	return cfg.RequireToken
}

// instance is one running generation of the server: everything a restart
// throws away.
type instance struct {
	srv        *Server
	cfg        Config
	httpSrv    *http.Server
	mcp        *server.MCPServer
	streamable *server.StreamableHTTPServer
	subs       *subscriptions
	inflight   inflight
	served     chan struct{} // closed when httpSrv.Serve returns

	idsMu sync.Mutex
	ids   map[string]bool // session ids this generation handed out
}

// Start listens on 127.0.0.1 on a free port and serves cfg.
func Start(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg}
	s.counters.reset()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testserver: listen: %w", err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln, cfg)
	return s, nil
}

// StartAt listens on addr and serves cfg: a replica behind a load
// balancer, whose configuration names its address before it starts.
func StartAt(addr string, cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, addr: addr}
	s.counters.reset()
	ln, err := listenRetry(addr)
	if err != nil {
		return nil, err
	}
	s.serve(ln, cfg)
	return s, nil
}

// URL returns the MCP endpoint, "http://127.0.0.1:PORT/mcp", or https
// with Config.TLS.
func (s *Server) URL() string {
	s.mu.Lock()
	tlsOn := s.cfg.TLS != nil
	s.mu.Unlock()
	if tlsOn {
		return "https://" + s.addr + "/mcp"
	}
	return "http://" + s.addr + "/mcp"
}

// Addr returns "127.0.0.1:PORT"; it stays the same across restarts.
func (s *Server) Addr() string { return s.addr }

// Reconfigure sets the config used by the next Start or Restart.
func (s *Server) Reconfigure(cfg Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
}

// Start listens again on the same address with a fresh mcp-go server built
// from the current config, so every session expires. Counters persist.
// It fails if the server is running or closed.
func (s *Server) Start() error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.mu.Lock()
	closed, running, cfg := s.closed, s.inst != nil, s.cfg
	s.mu.Unlock()
	switch {
	case closed:
		return errClosed
	case running:
		return errors.New("testserver: already running")
	}
	ln, err := listenRetry(s.addr)
	if err != nil {
		return err
	}
	s.serve(ln, cfg)
	return nil
}

// Stop is a hard stop: it closes the listener and every open connection at
// once, and every session expires. It returns after the handlers of the
// stopped generation have returned. Stop is idempotent.
func (s *Server) Stop() {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.stopLocked()
}

// Shutdown is a graceful stop, as a replica's on SIGTERM: it closes the
// listener at once, lets the requests in flight finish for up to grace,
// then stops hard as Stop does.
func (s *Server) Shutdown(grace time.Duration) {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.mu.Lock()
	inst := s.inst
	s.mu.Unlock()
	if inst != nil {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		_ = inst.httpSrv.Shutdown(ctx)
		cancel()
	}
	s.stopLocked()
}

// Restart is Stop followed by Start.
func (s *Server) Restart() error {
	s.Stop()
	return s.Start()
}

// Close stops the server for good and waits for every goroutine it started.
func (s *Server) Close() {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopLocked()
	s.taskWork.close()
}

func (s *Server) stopLocked() {
	s.mu.Lock()
	inst := s.inst
	s.inst = nil
	s.mu.Unlock()
	if inst != nil {
		inst.stop()
	}
}

func listenRetry(addr string) (net.Listener, error) {
	var err error
	for range listenAttempts {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(listenBackoff)
	}
	return nil, fmt.Errorf("testserver: listen %s: %w", addr, err)
}

// serve builds a fresh generation on ln and publishes it.
func (s *Server) serve(ln net.Listener, cfg Config) {
	inst := &instance{srv: s, cfg: cfg, served: make(chan struct{})}
	inst.subs = newSubscriptions()
	inst.mcp = newMCPServer(s, cfg, inst.subs)
	inst.streamable = server.NewStreamableHTTPServer(inst.mcp, streamableOptions(cfg)...)
	mux := http.NewServeMux()
	mux.Handle("/mcp", inst)
	var h http.Handler = mux
	if cfg.Guard != nil {
		// Outside the instance's counting: a refused request never reached
		// the MCP server.
		h = cfg.Guard(mux)
	}
	inst.httpSrv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if cfg.TLS != nil {
		// ServeTLS adds h2 to the ALPN protocols of a clone of this.
		inst.httpSrv.TLSConfig = cfg.TLS.Clone()
	}

	s.mu.Lock()
	s.inst = inst
	s.mu.Unlock()
	go func() {
		defer close(inst.served)
		if cfg.TLS != nil {
			_ = inst.httpSrv.ServeTLS(ln, "", "")
			return
		}
		_ = inst.httpSrv.Serve(ln)
	}()
}

func streamableOptions(cfg Config) []server.StreamableHTTPOption {
	// mcp-go's transport logs through slog.Default; keep test output clean.
	opts := []server.StreamableHTTPOption{
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)),
	}
	if (cfg.Era == SessionEra || cfg.MalformedDiscover) && !cfg.NoHandshake {
		opts = append(opts,
			server.WithStreamableHTTPProtocolVersions(
				mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326),
			server.WithStateful(true))
	}
	if cfg.EventStore {
		opts = append(opts, server.WithEventStore(server.NewInMemoryEventStore()))
	}
	if cfg.SessionIdleTTL > 0 {
		opts = append(opts, server.WithSessionIdleTTL(cfg.SessionIdleTTL))
	}
	// Localhost (DNS rebinding) protection stays on: it only rejects a
	// loopback connection whose Host is not loopback, and a TCP proxy on
	// another 127.0.0.1 port still sends Host 127.0.0.1:<port>.
	return opts
}

func (inst *instance) stop() {
	// Closing the connections cancels every request context, which is what
	// makes in-flight handlers (SSE streams, slow tools) return.
	_ = inst.httpSrv.Close()
	// Shutdown stops mcp-go's idle-session sweeper and ends GET streams; the
	// http.Server it would also shut down is nil because we serve ourselves.
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	_ = inst.streamable.Shutdown(ctx)
	<-inst.served
	inst.inflight.closeAndWait(stopWait)
	// http.Server.Close does not wait for handlers, so a GET that was already
	// past its session lookup can start the session's listening pump (event
	// store only) after Shutdown's CloseSessions took its snapshot; the pump
	// then runs forever. No handler runs now, so this pass sees them all.
	inst.streamable.CloseSessions(ctx)
}

// inflight counts running handlers so that Stop can wait for them. Unlike a
// WaitGroup it refuses new entries once closing, so a request racing with
// Stop cannot Add after Wait has begun.
type inflight struct {
	mu      sync.Mutex
	n       int
	closing bool
	idle    chan struct{}
}

func (g *inflight) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.n++
	return true
}

func (g *inflight) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.closing && g.n == 0 {
		close(g.idle)
	}
}

func (g *inflight) closeAndWait(limit time.Duration) {
	g.mu.Lock()
	g.closing = true
	g.idle = make(chan struct{})
	if g.n == 0 {
		close(g.idle)
	}
	idle := g.idle
	g.mu.Unlock()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
	}
}
