package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client/internal/deadline"
	"github.com/resilientmcp/resilientmcp/client/internal/listings"
	"github.com/resilientmcp/resilientmcp/client/internal/notify"
	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/internal/tasks"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/retry"
)

// ResilientClient is an MCP client over Streamable HTTP that re-initializes
// expired sessions, reconnects with backoff, and never replays a call that
// is unsafe to repeat. It implements mcp-go's MCPClient, and has the methods of
// mcp-go's concrete *client.Client but Start and GetTransport.
//
// ResilientClient is safe for concurrent use by any number of goroutines.
type ResilientClient struct {
	endpoint     string
	opts         options
	httpClient   *http.Client
	ownTransport *wire.Renewable // the Transport of the client's own HTTP client, renewed when the client goes idle; nil with WithHTTPClient
	log          *slog.Logger
	oauth        *auth.OAuth    // WithOAuth's token source, nil without
	obs          *observers.Set // WithObserver's, nil without

	lifetime  context.Context // ends at Close
	stop      context.CancelFunc
	deadlines *deadline.Shared // for calls made with a bare context
	closed    atomic.Bool
	closeOnce sync.Once

	// messages: the server's messages outside calls: notifications and
	// their handlers, the streams that carry them, the subscriptions and
	// logging level restored on every new session, the registry of calls
	// followed by their progress (client/internal/notify; messages.go).
	messages notify.Messages

	tasks       *tasks.Calls     // tool calls made tasks, and the TaskStore of their ids (client/internal/tasks)
	listings    listings.Cache   // the server's tools, for the replay decision, and the cache of listings and reads (listinghost.go)
	credentials wire.Credentials // the credential last sent, keying private answers (listings.Cache); the HTTP chain's

	background sync.WaitGroup // the goroutines the client starts for itself, which Close waits for (see backgroundMu)

	// backgroundMu is goBackground's, held while it checks closed and adds
	// to background. background counts the listings of tools and the
	// listing store's writer (listings.Cache, through the host's
	// StartBackground), and, through goBackground, the
	// notifications/cancelled of an abandoned request (notify's
	// TellCancelled) and the tasks/cancel of an abandoned task
	// (tasks.Calls). None starts once Close has set closed: each adds to
	// background under backgroundMu, and Close takes it once, as a
	// barrier, before it waits.
	backgroundMu sync.Mutex

	parity              parity // what mcp-go's *client.Client methods read; see parity.go
	elicitationDefaults bool   // the caller's elicitation handler is wrapped to fill in defaults; see elicitation.go

	stats observers.Counters

	// Lock order of the whole client, outermost first. Four chains:
	//
	//   - the sessions' two, documented on sessions (session.go): the
	//     pool's lock → sessions.stateMu → the notifier's
	//     (transitions.Notifier.mu), and the pool's lock → the
	//     breaker's (breaker.Breaker.mu) → the notifier's;
	//   - a session's notify.Streams.mu → the memory's mu, which guards
	//     the listens too (see notify.Messages);
	//   - the listing store writer's mu → backgroundMu (the Close barrier,
	//     listings.Cache).
	//
	// Every other lock is a leaf, taken with nothing else locked under it:
	// notify.Dispatcher.mu (the notifications'), listings.Cache.mu, backgroundMu,
	// deadline.Shared.mu,
	// the progress registry's and each followed call's, the task store's,
	// a call trace's (observers.Trace's),
	// wire.Exchange.mu, wire.Renewable.mu (held shared while a request is
	// handed to net/http, and taken exclusively only by TryLock, so it
	// never waits on one), and the health monitor's, the retry budget's and
	// the token layer's own (auth documents its order). No request is
	// sent but under Renewable.mu's shared hold, and no user code runs (the state and notification handlers,
	// the logger's handler, the grant store), under any lock of the
	// client: the notifier and the dispatcher call handlers from their own
	// goroutines.
	//
	// sess is the sessions' life: the pool, dial and open, probes, the
	// breaker, affinity, and the connectivity state (session.go).
	sess sessions
}

var _ mcpclient.MCPClient = (*ResilientClient)(nil)

// New returns a client for the MCP endpoint at endpoint, an absolute http or
// https URL. It validates the endpoint and the options and does no I/O: the
// first session is opened by Initialize, or by the first call.
func New(endpoint string, opts ...Option) (*ResilientClient, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("resilientmcp: invalid endpoint %q: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("resilientmcp: invalid endpoint %q: want an absolute http or https URL with a host", endpoint)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.stdio != nil {
		o.invalidf("an option of NewStdio's (WithStdioEnv, WithStdioDir, WithRestartLimit, WithStdioStopTimeout) given to New")
	}
	if o.tlsConfig != nil && u.Scheme != "https" {
		o.invalidf("WithTLSConfig for %s endpoint %q: there is no TLS to configure", u.Scheme, endpoint)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("resilientmcp: invalid options: %w", err)
	}

	var elicitationDefaults bool
	o.clientOptions, elicitationDefaults = notify.WithElicitationDefaults(o.clientOptions)

	c := &ResilientClient{endpoint: endpoint, opts: o, log: o.logger, obs: observers.New(o.observing, u, errorClass)}
	c.elicitationDefaults = elicitationDefaults
	if err := c.configureTransport(u); err != nil {
		return nil, err
	}
	c.init(endpoint)
	return c, nil
}

// configureTransport makes the HTTP side of a client of New: the HTTP
// client its sessions send through, its RoundTrippers built in one place
// (wire.Chain, which lists them in order) over the caller's Transport or
// the client's own. The options of each session's mcp-go transport are
// made at each dial (transportOptions).
func (c *ResilientClient) configureTransport(u *url.URL) error {
	o := &c.opts
	base := o.httpClient
	if base == nil {
		base, c.ownTransport = wire.TunedClient(u, o.tlsConfig)
		if o.wrapTransport != nil {
			wrapped := o.wrapTransport(c.ownTransport)
			if wrapped == nil {
				return errors.New("resilientmcp: invalid options: WithTransportWrapper's function returned nil")
			}
			// Beneath a layer of the caller's, the Renewable tells each
			// request's exchange whether it was reached: only then does
			// httptrace's silence prove a request never left.
			c.ownTransport.MarkReached()
			base.Transport = wrapped
		}
	}
	chain := wire.Chain{
		Transport: base.Transport,
		Own:       c.ownTransport != nil,
		Observer:  c.obs.Layer(),
		Token: func(next http.RoundTripper) http.RoundTripper {
			if layer := c.authLayer(next, u); layer != nil {
				return layer
			}
			return next
		},
		Limit: o.maxResponseBytes, Log: o.logger, WrongAnswers: &c.stats.WrongAnswers,
		Headers: o.headers, // on every request, the session's DELETE at Close too
	}
	if !o.listingCacheOff {
		// The credential each request went out with keys the private
		// answers it brings (listings.Cache).
		chain.Credentials = &c.credentials
	}
	hc := *base
	hc.Transport = chain.Build()
	c.httpClient = &hc
	return nil
}

// init makes what every client has, over HTTP or stdio: its lifetime, the
// shared deadlines, the state notifier and the pool of sessions. target
// names the server in the log.
func (c *ResilientClient) init(target string) {
	o := &c.opts
	// The defaults go in the options themselves: the client keeps no
	// second copy of them (BenchmarkIdleClients).
	if o.retryBudget == nil {
		o.retryBudget = retry.DefaultBudget()
	}
	c.listings.Init((*listingHost)(c))
	c.lifetime, c.stop = context.WithCancel(context.Background())
	c.messages.Init((*messagesHost)(c))
	c.deadlines = deadline.New(o.callTimeout)
	c.obs.Share(c.deadlines.Get)
	c.tasks = tasks.New((*taskHost)(c))
	c.sess.init(c, target)
}

// State reports the client's connectivity.
func (c *ResilientClient) State() State { return State(c.sess.state.Load()) }

// Close ends the client: calls in flight return with ErrClosed, the reconnect
// loop stops, the session is ended (DELETE in the session era, bounded to a
// second), and Close returns once every goroutine the client started has
// exited. Calls after Close return ErrClosed. Close is idempotent and always
// returns nil.
func (c *ResilientClient) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.stop()
		// Made if need be, to be stopped: a failure told after this (a
		// session lost as the pool closes it) arms no breaker that would
		// open, log and tell the observers after Close.
		c.sess.outage().Stop()
		c.deadlines.Close()
		// Nothing of the client's own starts once closed is seen under
		// this lock (see backgroundMu): a barrier, then the wait.
		c.backgroundMu.Lock()
		//lint:ignore SA2001 an empty critical section: a barrier
		c.backgroundMu.Unlock()
		c.sess.pool.Close()
		c.background.Wait()
		if c.oauth != nil {
			c.oauth.Close()
		}
		c.messages.Close()
		c.sess.notifier.Wait()
		if c.ownTransport != nil {
			c.closeIdleConnections()
		}
	})
	return nil
}

// goBackground runs f on a goroutine Close waits for, unless the client is
// closed; it reports whether f runs.
func (c *ResilientClient) goBackground(f func()) bool {
	// Close sets closed, then takes backgroundMu once, then waits for
	// background: an Add made under the lock before that is waited for.
	c.backgroundMu.Lock()
	defer c.backgroundMu.Unlock()
	if c.closed.Load() {
		return false
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		f()
	}()
	return true
}

// closeIdleConnections closes the idle connections of the HTTP client, and
// of the client's own transport beneath a layer of the caller's
// (WithTransportWrapper), which may not pass the call on (otelhttp's does
// not).
func (c *ResilientClient) closeIdleConnections() {
	if c.httpClient == nil {
		return // a stdio client's
	}
	c.httpClient.CloseIdleConnections()
	if c.ownTransport != nil && c.opts.wrapTransport != nil {
		c.ownTransport.CloseIdleConnections()
	}
}

// OnNotification registers a handler for the server's notifications. It is
// kept across re-initializations and receives the notifications of every
// session, in the order they arrived, on a goroutine of the client's: a slow
// handler does not stall the sessions. If handlers fall more than 1024
// notifications behind, newer ones are dropped and counted in
// Stats().DroppedNotifications. In the session era, notifications reach an
// idle client on the session's event stream: registering the first handler
// opens it on the sessions in service, and every later session opens with
// it.
func (c *ResilientClient) OnNotification(handler func(mcp.JSONRPCNotification)) {
	c.messages.OnNotification(handler)
}

// ProtocolVersion is the protocol version negotiated by the session in
// service, or "" when there is none. It is decided again on every
// re-initialization.
func (c *ResilientClient) ProtocolVersion() string {
	if vs := c.sess.pool.Values(); len(vs) > 0 {
		return vs[0].version
	}
	return ""
}
