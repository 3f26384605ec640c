// Package gosdkserver runs the official Go SDK's Streamable HTTP server
// (github.com/modelcontextprotocol/go-sdk) in process on 127.0.0.1, for the
// tests that hold the client to servers nobody here wrote. Only the tools are
// ours, written with the SDK's API; the transport, the sessions and their
// errors are the SDK's own.
//
// The server can be restarted on the same address the two ways a process
// ends: Graceful (what a server does on SIGTERM: stop accepting, let the
// requests in flight finish, end the event streams) and Abrupt (SIGKILL: the
// listener and every connection closed at once). Either way the sessions die
// with the old generation, as they would with the process. Freeze models
// SIGSTOP: the process stops reading and writing, the kernel still accepts
// connections and buffers their bytes, and Thaw (SIGCONT) goes on from there.
//
// It is imported only by tests, so go-sdk stays out of every build of the
// module's packages.
package gosdkserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config describes the server of every generation.
type Config struct {
	// Stateless is StreamableHTTPOptions.Stateless: no Mcp-Session-Id, no
	// GET event stream (405), a session per request.
	Stateless bool
	// EventStore gives the handler a MemoryEventStore, so SSE events carry
	// ids and a stream can be resumed with Last-Event-ID. Each generation has
	// its own store: it dies with the process.
	EventStore bool
	// SessionTimeout is StreamableHTTPOptions.SessionTimeout: a session that
	// receives no POST for this long is closed. 0: never.
	SessionTimeout time.Duration
}

// Stop is how a generation ends.
type Stop int

const (
	// Graceful models SIGTERM to a server that shuts down properly
	// (http.Server.Shutdown): the listener closes, the event streams are
	// ended, the requests in flight finish (within a bound), then the
	// connections close and the sessions expire.
	Graceful Stop = iota
	// Abrupt models SIGKILL: the listener and every connection close at once,
	// requests in flight die unanswered, the sessions expire.
	Abrupt
)

// String names the signal the stop models.
func (s Stop) String() string {
	if s == Abrupt {
		return "SIGKILL"
	}
	return "SIGTERM"
}

// CounterURI is the subscribable resource; UpdateResource announces it.
const CounterURI = "test://counter"

// Bounds: a restart on the same port normally listens at once (Go sets
// SO_REUSEADDR); a graceful stop waits this long for requests in flight.
const (
	listenAttempts = 50
	listenBackoff  = 20 * time.Millisecond
	gracePeriod    = 5 * time.Second
	maxPeek        = 64 << 10 // a listen request is far smaller
)

// Server is a restartable go-sdk server. It is safe for concurrent use.
type Server struct {
	cfg  Config
	addr string // fixed by the first listen
	gate gate

	lifeMu sync.Mutex // serialises Restart, Close
	mu     sync.Mutex // guards gen, runs, byID
	gen    *generation
	runs   map[string]int64 // tool name → executions, across generations
	byID   map[string]int64 // increment's "id" argument → executions
}

// generation is one run of the "process": everything a restart throws away.
type generation struct {
	mcp     *mcp.Server
	httpSrv *http.Server
	served  chan struct{}

	mu      sync.Mutex
	streams map[*http.Request]context.CancelFunc // open GET event streams
}

// Start listens on 127.0.0.1 on a free port and serves cfg.
func Start(cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gosdkserver: listen: %w", err)
	}
	s := &Server{cfg: cfg, addr: ln.Addr().String(), runs: map[string]int64{}, byID: map[string]int64{}}
	s.serve(ln)
	return s, nil
}

// URL is the MCP endpoint, "http://127.0.0.1:PORT/mcp".
func (s *Server) URL() string { return "http://" + s.addr + "/mcp" }

// Addr is "127.0.0.1:PORT"; it stays the same across restarts.
func (s *Server) Addr() string { return s.addr }

// Restart ends the running generation as how says and starts a fresh one,
// with no sessions, on the same address. Counters persist.
func (s *Server) Restart(how Stop) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.stop(how)
	ln, err := listenRetry(s.addr)
	if err != nil {
		return err
	}
	s.serve(ln)
	return nil
}

// Close ends the server abruptly for good and waits for every goroutine it
// and the SDK started.
func (s *Server) Close() {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.stop(Abrupt)
}

// Freeze stops the server as SIGSTOP stops a process: connections are still
// accepted by the kernel and bytes sent are buffered, but nothing is read,
// handled or answered until Thaw.
func (s *Server) Freeze() { s.gate.close() }

// Thaw lets a frozen server go on where it stopped (SIGCONT).
func (s *Server) Thaw() { s.gate.open() }

// ForgetSessions closes every session of the running generation, as a
// server that drops them (an idle timeout, a deploy that kept the port) would
// have it: they expire, and the next request carrying one of their ids gets
// the SDK's 404. It
// returns how many it closed.
func (s *Server) ForgetSessions() int {
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	if g == nil {
		return 0
	}
	return closeSessions(g.mcp)
}

// UpdateResource announces a change of CounterURI to every session
// subscribed to it (notifications/resources/updated).
func (s *Server) UpdateResource() {
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	if g != nil {
		_ = g.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: CounterURI})
	}
}

// Runs is how many times tool ran, across restarts.
func (s *Server) Runs(tool string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[tool]
}

// RunsOf is how many times increment ran with the "id" argument id.
func (s *Server) RunsOf(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// RunsByID is RunsOf for every id.
func (s *Server) RunsByID() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := make(map[string]int, len(s.byID))
	for id, n := range s.byID {
		runs[id] = int(n)
	}
	return runs
}

func (s *Server) ran(tool, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[tool]++
	if id != "" {
		s.byID[id]++
	}
}

func (s *Server) serve(ln net.Listener) {
	g := &generation{mcp: s.newMCPServer(), served: make(chan struct{}), streams: map[*http.Request]context.CancelFunc{}}
	opts := &mcp.StreamableHTTPOptions{Stateless: s.cfg.Stateless, SessionTimeout: s.cfg.SessionTimeout}
	if s.cfg.EventStore {
		opts.EventStore = mcp.NewMemoryEventStore(nil)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.mcp }, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.trackStreams(h))
	g.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.gen = g
	s.mu.Unlock()
	go func() {
		defer close(g.served)
		_ = g.httpSrv.Serve(&frozenListener{Listener: ln, gate: &s.gate})
	}()
}

// trackStreams lets a graceful stop end the streams held open for
// notifications, the GET event stream and the stateless era's
// subscriptions/listen POST, which never end on their own and would hold
// Shutdown for its whole bound; a server that shuts down properly ends them
// (as mcp-go's Shutdown and the TS SDK's transport close do). Calls in
// flight are left to finish.
func (g *generation) trackStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
		g.mu.Lock()
		g.streams[r] = cancel
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			delete(g.streams, r)
			g.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// isStream reports whether r opens a notification stream. It reads a POST's
// body to tell, and puts it back for the SDK.
func isStream(r *http.Request) bool {
	if r.Method == http.MethodGet {
		return true
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeek))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return err == nil && bytes.Contains(body, []byte(`"subscriptions/listen"`))
}

func (s *Server) stop(how Stop) {
	s.mu.Lock()
	g := s.gen
	s.gen = nil
	s.mu.Unlock()
	if g == nil {
		return
	}
	// A frozen process that gets SIGKILL dies frozen; a thawed one runs its
	// shutdown. Either way nothing of it may stay blocked.
	s.gate.open()
	if how == Graceful {
		g.mu.Lock()
		for _, cancel := range g.streams {
			cancel()
		}
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), gracePeriod)
		_ = g.httpSrv.Shutdown(ctx)
		cancel()
	}
	_ = g.httpSrv.Close()
	<-g.served
	// The process is gone, and its sessions with it: closing them ends the
	// SDK's goroutines (session timers, connections).
	closeSessions(g.mcp)
}

func closeSessions(srv *mcp.Server) int {
	var all []*mcp.ServerSession
	for ss := range srv.Sessions() {
		all = append(all, ss)
	}
	for _, ss := range all {
		_ = ss.Close()
	}
	return len(all)
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
	return nil, fmt.Errorf("gosdkserver: listen %s: %w", addr, err)
}
