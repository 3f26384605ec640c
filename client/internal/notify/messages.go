// Package notify is the room of the server's messages outside calls: the
// notifications and their handlers (the Dispatcher), the session era's GET
// event stream and the stateless era's subscriptions/listen streams that
// carry them, what every new session is told again (subscriptions, the
// logging level), the defaults of elicitation forms, and the client's side
// of progress (the registry that routes notifications/progress to calls,
// notifications/cancelled). A call's own progress is client/internal/progress.
//
// It does not import package client: what it needs of the client (its
// sessions, sending a request through the client's one policy, its
// logger, its background goroutines) it asks through Host and Session,
// which the client implements.
package notify

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/progress"
)

// Host is what the room needs of the client it serves. Its methods are
// called on the sessions' readers and the room's own goroutines, never
// under a lock of the room's.
type Host interface {
	// Config is the client's configuration, as the room reads it.
	Config() Config
	// EachSession calls f with every session in service.
	EachSession(f func(Session))
	// Do runs send on a session, as a call of method, through the
	// client's books and its one policy.
	Do(ctx context.Context, method string, send func(Session) error) error
	// Discard takes s out of service for a loss of kind, caused by err,
	// and opens a new session in the background; it reports whether s was
	// in service.
	Discard(s Session, kind policy.Loss, err error) bool
	// Probe probes s as the keepalive does: nil if the server answered;
	// else its error and, if the probe failed as the policy judged it,
	// that verdict (judged).
	Probe(ctx context.Context, s Session) (v policy.Verdict, judged bool, err error)
	// Notified tells the client's cache of listings of n, before the
	// handlers have it.
	Notified(n mcp.JSONRPCNotification)
	// ListingsListen reports whether the cache of listings wants the list
	// changes.
	ListingsListen() bool
	// Background runs f on a goroutine Close waits for, unless the client
	// is closed; it reports whether f runs.
	Background(f func()) bool
}

// Config is what the room reads of the client's options.
type Config struct {
	Log              *slog.Logger
	Lifetime         context.Context // ends at Close
	ProbeTimeout     time.Duration
	NewBackOff       func() backoff.BackOff
	MaxResponseBytes int64
	// ClientOptions: the caller gave mcp-go client options.
	ClientOptions bool
	// The HTTP side, for the event stream the client reads itself.
	Endpoint   string
	HTTPClient *http.Client
	Headers    map[string]string
	HeaderFunc transport.HTTPHeaderFunc
}

// Session is what the room needs of one of the client's sessions.
type Session interface {
	// Streams is the room's state of the session.
	Streams() *Streams
	// Context ends when the session is closed.
	Context() context.Context
	SessionEra() bool
	Member() int
	Version() string
	MCP() *mcpclient.Client
	// Policy is what the policy needs to know of the session.
	Policy() policy.Session
	// LevelSet records that a logging level was set on the session.
	LevelSet(level mcp.LoggingLevel)
}

// Streams is the room's state of one session: its event stream and its
// subscriptions/listen stream. The zero value is ready; it is part of the
// session, and safe for concurrent use.
type Streams struct {
	// watch follows the session's GET event stream (eventstream.go);
	// listening: the stream is open or being opened, by mcp-go or by the
	// client.
	watch     *Watch
	listening atomic.Bool
	gen       atomic.Uint64      // which relisten owns the stream
	mu        sync.Mutex         // orders relistens; outside memory.mu (see Messages)
	stop      context.CancelFunc // ends the stream of the last relisten
	loops     sync.WaitGroup     // listen loops
}

// SetListening records whether the session's event stream is open or
// being opened already (a transport made to listen; a stream that is the
// session itself).
func (st *Streams) SetListening(on bool) { st.listening.Store(on) }

// Watch makes w the watch of s's event stream, now that s is made.
func (st *Streams) Watch(w *Watch, s Session) {
	st.watch = w
	w.session.Store(s)
}

// Wait waits for the session's listen loops, once its context ended.
func (st *Streams) Wait() { st.loops.Wait() }

// Messages is the client's room of the server's messages outside calls.
// It is part of the client, made ready by Init, and safe for concurrent
// use.
//
// Lock order: a session's Streams.mu → memory.mu, which also guards what
// callers of Listen listen for. The dispatcher's lock, the progress
// registry's, are leaves.
type Messages struct {
	host          Host
	notifications *Dispatcher
	// memory: the subscriptions and logging level, restored on every new
	// session, and what callers of Listen asked for; made by the first
	// (mem): an idle client, or one that never subscribes, sets a level
	// or listens, pays a pointer for it (TestClientSizeClass).
	memory   atomic.Pointer[memory]
	progress atomic.Pointer[progress.Registry]
}

// mem is the memory, made if it was not.
func (m *Messages) mem() *memory {
	if mem := m.memory.Load(); mem != nil {
		return mem
	}
	m.memory.CompareAndSwap(nil, new(memory))
	return m.memory.Load()
}

// Init makes m ready to serve the client h.
func (m *Messages) Init(h Host) {
	m.host = h
	m.notifications = NewDispatcher()
}

// Close stops the delivery of notifications, after the handler under way,
// and waits for it.
func (m *Messages) Close() { m.notifications.Close() }

// Dropped is how many notifications were dropped because a handler was too
// slow.
func (m *Messages) Dropped() uint64 { return m.notifications.dropped.Load() }

// OnNotification registers a handler for the server's notifications.
func (m *Messages) OnNotification(handler func(mcp.JSONRPCNotification)) {
	m.notifications.Add(handler)
	// Sessions opened before the first handler have no event stream to
	// carry notifications: open it now (F32). Later ones open with it.
	m.host.EachSession(m.listenLate)
}

// Handle receives every session's notifications, on its reader: it must
// not block.
func (m *Messages) Handle(n mcp.JSONRPCNotification) {
	m.host.Notified(n)
	if n.Method == string(mcp.MethodNotificationProgress) {
		if !m.onProgress(n) {
			m.notifications.dropped.Add(1)
			m.host.Config().Log.Warn("progress dropped: the call's OnProgress is too slow", "token", n.Params.AdditionalFields["progressToken"])
		}
	}
	m.Dispatch(n)
}

// Dispatch hands n to the handlers, without blocking.
func (m *Messages) Dispatch(n mcp.JSONRPCNotification) {
	if !m.notifications.Deliver(n) {
		m.host.Config().Log.Warn("notification dropped: handlers are too slow", "method", n.Method)
	}
}

// Subscribed records a subscription to uri made (on) or ended, for every
// new session.
func (m *Messages) Subscribed(uri string, on bool) { m.mem().subscribed(uri, on) }

// SetLevel records the logging level set, for every new session.
func (m *Messages) SetLevel(level mcp.LoggingLevel) { m.mem().setLevel(level) }

// Listening reports whether anything asks for notifications to keep
// coming: a subscription, or a Listen under way.
func (m *Messages) Listening() bool {
	mem := m.memory.Load()
	subs, _ := mem.snapshot()
	return len(subs) > 0 || mem.listening()
}
