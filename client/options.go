package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/internal/stdio"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/health"
	"github.com/resilientmcp/resilientmcp/retry"
)

// An Option configures a ResilientClient. Options are applied in order by
// New. An Option is an immutable value: one may be given to any number of
// New calls, from any goroutine.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	keepAlive        time.Duration
	keepAliveTimeout time.Duration // 0: derived from keepAlive
	failureThreshold int
	newBackOff       func() backoff.BackOff
	maxAttempts      int
	retryBudget      *retry.Budget // WithRetryBudget; nil until New: one of the client's own
	callTimeout      time.Duration
	progressTimeout  time.Duration // 0: calls are not governed by progress
	maxCallDuration  time.Duration
	failFastAfter    time.Duration // 0: no circuit breaker
	poolSize         int
	httpClient       *http.Client                              // nil: a tuned client of our own
	tlsConfig        *tls.Config                               // WithTLSConfig's, for the client's own; nil: the defaults
	wrapTransport    func(http.RoundTripper) http.RoundTripper // WithTransportWrapper's; nil: none
	headers          map[string]string
	headerFunc       transport.HTTPHeaderFunc
	bearerToken      auth.FetchFunc
	oauth            *auth.Config
	clientInfo       *mcp.Implementation // WithClientInfo's; nil: the default (implementation)
	clientOptions    []mcpclient.ClientOption
	retryToolCall    func(mcp.Tool) bool
	retryableRPC     []int // WithRetryableRPCCodes
	stateHandler     func(from, to State)
	observing        *observers.Config // WithObserver's and WithServerName's; nil if neither was given
	logger           *slog.Logger
	maxResponseBytes int64
	keepIdleConn     bool
	noCookies        bool // WithCookies(false)
	taskCalls        bool // WithTaskCalls
	// frozenProber keeps the background prober from running, as in a
	// process frozen between requests (serverless); tests set it.
	frozenProber    bool
	listingCacheOff bool           // WithListingCache(false)
	sseFallback     bool           // WithSSEFallback
	maxStaleSet     bool           // WithMaxStale was given: listings.maxStale, not DefaultMaxStale
	taskStore       TaskStore      // WithTaskStore; nil: one in memory (client/internal/tasks)
	listings        listingOptions // the cache of listings and reads (listings.go; the cache is listings.Cache)
	invalid         error          // every invalid option's, joined

	stdio *stdio.Options // NewStdio's own (stdio.go); nil if none was given
}

// defaultKeepAlive is the keepalive interval unless WithKeepAlive says
// otherwise.
const defaultKeepAlive = 30 * time.Second

func defaultOptions() options {
	return options{
		keepAlive:        defaultKeepAlive,
		failureThreshold: 1,
		newBackOff:       retry.DefaultBackOff,
		maxAttempts:      3,
		callTimeout:      2 * time.Minute,
		maxCallDuration:  DefaultMaxCallDuration,
		failFastAfter:    DefaultFailFastAfter,
		poolSize:         1,
		retryToolCall:    DefaultRetryToolCall,
		retryableRPC:     []int{mcp.INTERNAL_ERROR},
		logger:           slog.New(slog.DiscardHandler),
		maxResponseBytes: wire.DefaultMaxResponseBytes,
	}
}

func (o *options) invalidf(format string, args ...any) {
	o.invalid = errors.Join(o.invalid, fmt.Errorf(format, args...))
}

// WithKeepAlive probes a session that has been idle for interval, in the
// background, and replaces it if it does not answer; and it probes before
// use a session not heard from within interval (the process was frozen, or
// the prober could not run). Probes are ping in the session era and
// server/discover in the stateless era. A session's first probe comes at a
// random point of its first interval, so that clients opened together (or
// reconnecting together after an outage) do not probe the server in step;
// after that, a session with traffic is not probed. Default 30s. 0 turns the
// background prober off; a session idle for longer than 30s is then still
// probed before use.
func WithKeepAlive(interval time.Duration) Option {
	return optionFunc(func(o *options) {
		if interval < 0 {
			o.invalidf("WithKeepAlive(%v): interval must not be negative", interval)
		}
		o.keepAlive = interval
	})
}

// WithKeepAliveTimeout bounds one probe. Default: half the keepalive
// interval, at most 10s.
func WithKeepAliveTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.invalidf("WithKeepAliveTimeout(%v): timeout must be positive", d)
		}
		o.keepAliveTimeout = d
	})
}

// WithKeepAliveFailureThreshold is how many probes in a row must fail before
// the session is replaced. Default 1.
func WithKeepAliveFailureThreshold(n int) Option {
	return optionFunc(func(o *options) {
		if n < 1 {
			o.invalidf("WithKeepAliveFailureThreshold(%d): threshold must be at least 1", n)
		}
		o.failureThreshold = n
	})
}

// WithBackOff sets the pause between reconnect attempts. newBackOff is called
// for a fresh schedule each time a reconnect loop starts. Default: exponential
// from 100ms, ×1.6, ±20% jitter, at most 10s apart, no maximum elapsed time
// (the caller's context decides how long to wait).
func WithBackOff(newBackOff func() backoff.BackOff) Option {
	return optionFunc(func(o *options) {
		if newBackOff == nil {
			o.invalidf("WithBackOff(nil)")
			return
		}
		o.newBackOff = newBackOff
	})
}

// WithMaxAttempts is how many times one call may be sent when sending it
// may have run it (the outcome of the earlier attempt is unknown and the call
// is safe to repeat). Sends that provably did not run do not count: waiting
// for an unreachable server, a 503 or 429, a request not completely written,
// a pooled connection found dead under the request, an answer with a code
// of WithRetryableRPCCodes (a server that does not serve now); the call's
// deadline and the shared retry budget bound those. Resends after the
// session expired (404) have a cap of their own: n, plus one for every
// other session of the pool, since one restart expires them all. Default 3.
func WithMaxAttempts(n int) Option {
	return optionFunc(func(o *options) {
		if n < 1 {
			o.invalidf("WithMaxAttempts(%d): at least one attempt is needed", n)
		}
		o.maxAttempts = n
	})
}

// WithRetryBudget sets the budget every retry of the client is paid from,
// as gRPC's retry throttling does: resends and replays of calls, across all
// goroutines, so that a failing server sees about 1+Percent times its load,
// not MaxAttempts times. One Budget may be shared by several clients (of
// one server, say) so that they hold back together. Default
// retry.DefaultBudget(): a fifth of the calls of the last 10 seconds, plus a
// reserve of 100 retries refilled at 10 a second. A client with many calls in
// flight at once (hundreds of goroutines, each met by one restart) may want a
// larger reserve.
func WithRetryBudget(b *retry.Budget) Option {
	return optionFunc(func(o *options) {
		if b == nil {
			o.invalidf("WithRetryBudget(nil)")
			return
		}
		o.retryBudget = b
	})
}

// WithCallTimeout is the deadline of a call whose context has none, so that
// nothing hangs forever. Default 2m. Calls made with context.Background() or
// context.TODO() share deadlines, so theirs may come up to a sixteenth of d
// later (2m: up to 7.5s); that spares every such call a context of its own.
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.invalidf("WithCallTimeout(%v): timeout must be positive", d)
		}
		o.callTimeout = d
	})
}

// WithProgressTimeout governs every call by progress, as ProgressTimeout
// does for one: a call ends when no notifications/progress for it has come
// for idle, and its absolute bound is the shorter of its context's deadline
// and WithMaxCallDuration (WithCallTimeout no longer applies). A call's own
// ProgressTimeout wins over it. Default off: calls are bounded by their
// deadline, else WithCallTimeout.
func WithProgressTimeout(idle time.Duration) Option {
	return optionFunc(func(o *options) {
		if idle <= 0 {
			o.invalidf("WithProgressTimeout(%v): the idle timeout must be positive", idle)
		}
		o.progressTimeout = idle
	})
}

// DefaultMaxCallDuration is WithMaxCallDuration's default: an hour. A call
// governed by progress is a long one by choice (tools that run ten
// minutes, or an hour, and say so); the bound is for a tool that reports
// progress forever, so that no call is unbounded. Work longer than that
// is better called as a task, which survives a cut connection.
const DefaultMaxCallDuration = time.Hour

// WithMaxCallDuration is the absolute bound of a call governed by progress
// (ProgressTimeout, WithProgressTimeout): the call ends at d, or at its
// context's deadline if that comes first, however much progress it
// reports. Ended after it was sent, it is ErrOutcomeUnknown with
// context.DeadlineExceeded. Calls not governed by progress keep
// WithCallTimeout. Default DefaultMaxCallDuration (1h).
func WithMaxCallDuration(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.invalidf("WithMaxCallDuration(%v): the bound must be positive", d)
		}
		o.maxCallDuration = d
	})
}

// WithTaskCalls makes every tools/call of a tool that offers to run as a
// task (execution.taskSupport "optional") a task, as AsTask does for one
// call. Default off: such tools are called plainly, and only tools whose
// taskSupport is "required" are called as tasks.
func WithTaskCalls() Option {
	return optionFunc(func(o *options) { o.taskCalls = true })
}

// WithTaskStore is where the ids of the tasks the client's calls created
// are kept until their results are delivered: an agent restarted finds
// them with PendingTasks and collects their results with ResumeTask.
// Default: in memory, forgotten at exit. NewFileTaskStore keeps them in a
// directory (one machine), and auth/redisstore's NewTaskStore in Redis
// (every replica).
func WithTaskStore(s TaskStore) Option {
	return optionFunc(func(o *options) {
		if s == nil {
			o.invalidf("WithTaskStore(nil)")
			return
		}
		o.taskStore = s
	})
}

// DefaultFailFastAfter is WithFailFastAfter's default: 30s. A restart, a
// rolling deploy, a container rescheduled are over within seconds to tens
// of seconds, and calls wait through them (within their deadlines); a
// server unreachable for longer is out, and a caller that holds clients to
// several servers should not spend each turn's whole deadline on the one
// that is gone. It is HikariCP's connectionTimeout.
const DefaultFailFastAfter = 30 * time.Second

// WithFailFastAfter is the client's circuit breaker: once the server has
// been unreachable for longer than d with no session in service (counted
// from the first failure, of a call, a probe or a dial, that left no
// session in service; only transport failures and 5xx other than 501 and
// 505 count, since a tool's isError, a JSON-RPC error, a 4xx, a refusal, a
// wrong answer or an expired session prove the server is there), calls fail
// at once with ErrUnavailable, and calls already waiting for a session end
// so too. The client's reconnect loop goes on, on its backoff schedule, in
// place of a breaker's half-open trial: when it has a session again the
// breaker closes and calls go through, with no call spent to find out.
// Stats().FailingFast says whether it is open; observers get observe.BreakerState.
// Default DefaultFailFastAfter (30s); 0 turns the breaker off, so that calls
// wait for a session for as long as their deadline allows.
func WithFailFastAfter(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.invalidf("WithFailFastAfter(%v): must not be negative (0 turns the breaker off)", d)
		}
		o.failFastAfter = d
	})
}

// WithPoolSize is the number of sessions kept to the endpoint. Default 1:
// a session may hold server-side state (subscriptions, logging level,
// per-session tools) that the caller relies on, and calls spread over several
// sessions would not all see it. Use more only for servers whose sessions hold
// no such state.
func WithPoolSize(n int) Option {
	return optionFunc(func(o *options) {
		if n < 1 {
			o.invalidf("WithPoolSize(%d): at least one session is needed", n)
		}
		o.poolSize = n
	})
}

// WithKeepIdleConnection(true) keeps the connection the keepalive probes use
// open while the client is idle, as net/http would. Default false: after a
// background probe finds the client with no call in flight, the client
// closes its idle connections, so an idle client holds no socket and no
// goroutine (about 8 KB in all instead of 20 KB, BenchmarkIdleClients), and
// its next probe or call dials. The cost falls on the first call after an
// idle period: it dials first, about 0.2 ms more on loopback, where such a
// call takes 1.9 times as long as on a kept connection
// (BenchmarkFirstCallAfterIdle), and over a network one round trip more,
// two over https (TCP, then a resumed TLS handshake). Keep the connection
// for a few clients far from their server whose first call after a pause
// must be fast; leave the default for many clients in one process.
//
// Only the client's own HTTP client is concerned: one given with
// WithHTTPClient keeps its connections as its Transport says.
func WithKeepIdleConnection(keep bool) Option {
	return optionFunc(func(o *options) { o.keepIdleConn = keep })
}

// WithHTTPClient sets the HTTP client every session shares. Default: a
// client of this ResilientClient's own whose idle connections are closed
// after 50s, below the idle timeouts of common load balancers (AWS ALB 60s,
// nginx 75s), so that a pooled connection is dropped by us before a
// middlebox drops it silently, and which keeps up to 64 idle connections per
// host, enough for a pool's calls in flight. The client's Transport is
// wrapped, never modified.
//
// What a client given here gives up, since its Transport is the caller's:
// the connection check before reuse (a request written on a pooled
// connection the server had already closed, as after a restart, ends an
// unsafe call with ErrOutcomeUnknown though it never ran: about four in ten
// in BenchmarkUnsafeCallAfterRestart), the tuned idle timeout, the renewal
// of the Transport when the client goes idle (WithKeepIdleConnection), and
// HTTP/2 unless its Transport offers it. For a private CA or a client
// certificate use WithTLSConfig, and for otelhttp, a proxy-aware or a
// recording layer WithTransportWrapper: both keep all of these. The client
// still keeps the Transport from sending a request again by itself over
// HTTP/2: over https (or h2c, with an http.Transport that speaks it) the
// requests it hands the Transport have no GetBody.
//
// Many ResilientClients may share one http.Client. An idle client then
// costs about 6 KB instead of 8 KB, but the clients share their
// connections' fate: a probe no longer tests the connection the client's
// next call will use, and a client that finds a connection dead closes the
// idle connections of all of them. The default gives each client its own.
func WithHTTPClient(c *http.Client) Option {
	return optionFunc(func(o *options) {
		if c == nil {
			o.invalidf("WithHTTPClient(nil)")
			return
		}
		o.httpClient = c
	})
}

// WithTLSConfig sets the TLS configuration of the client's own HTTP client,
// for a private certificate authority (RootCAs), a client certificate
// (Certificates, GetClientCertificate), or a minimum version; the endpoint
// must be https. Unlike WithHTTPClient it keeps everything the client's own
// HTTP client does: the connection check before reuse, idle connections
// dropped below load balancers' timeouts, the renewal of the Transport when
// the client goes idle, and HTTP/2 where the server offers it by ALPN. The
// config is cloned by New; a later change to it is not seen.
//
// TLS session tickets: the client's own HTTP clients share one session
// cache, so that a fleet reconnecting after an outage resumes its TLS
// sessions; a config given here keeps its ClientSessionCache, and without
// one gets a cache of its own client's, never the shared one, since a TLS
// session resumed from another client's cache would carry that client's
// certificate.
// Default: Go's TLS defaults and the system's roots.
func WithTLSConfig(c *tls.Config) Option {
	return optionFunc(func(o *options) {
		if c == nil {
			o.invalidf("WithTLSConfig(nil)")
			return
		}
		o.tlsConfig = c.Clone()
	})
}

// WithTransportWrapper puts a layer of the caller's over the client's own
// HTTP transport: otelhttp.NewTransport, a transport that goes through a
// proxy of its own choosing, one that records or signs requests. wrap is
// called once, by New, with the client's transport, and what it returns
// carries every request the client sends. The client's transport beneath
// keeps what WithHTTPClient gives up: the connection check before reuse,
// idle connections dropped below load balancers' timeouts, its renewal when
// the client goes idle (the layer stays; the Transport under it is
// renewed), and HTTP/2 where offered. For an http.Transport setting (a
// proxy URL, dial timeouts) the layer cannot reach, use WithHTTPClient.
//
// The layer must pass each request on at most once: one that sends a
// request again by itself (a retrying transport) would repeat calls the
// client decided were not safe to repeat. Default none.
func WithTransportWrapper(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return optionFunc(func(o *options) {
		if wrap == nil {
			o.invalidf("WithTransportWrapper(nil)")
			return
		}
		o.wrapTransport = wrap
	})
}

// WithHeaders adds headers to every request. Default none.
func WithHeaders(headers map[string]string) Option {
	return optionFunc(func(o *options) { o.headers = headers })
}

// WithHeaderFunc computes headers for each request, for instance a fresh
// token. Default none.
func WithHeaderFunc(f transport.HTTPHeaderFunc) Option {
	return optionFunc(func(o *options) { o.headerFunc = f })
}

// WithClientInfo identifies the client in the request used to initialize
// implicitly. Default: name "resilientmcp" and this module's version.
func WithClientInfo(info mcp.Implementation) Option {
	return optionFunc(func(o *options) { o.clientInfo = &info })
}

// implementation is the client's identity: WithClientInfo's, or the
// default. A pointer in options, not a copy: 104 B less for every client
// that keeps the default (BenchmarkIdleClients).
func (o *options) implementation() mcp.Implementation {
	if o.clientInfo != nil {
		return *o.clientInfo
	}
	return mcp.Implementation{Name: "resilientmcp", Version: wire.ModuleVersion()}
}

// WithClientOptions passes mcp-go client options (sampling, roots and
// elicitation handlers, protocol version) to every session. Default none.
// In the session era the server sends its own requests (sampling, roots,
// elicitation) on the GET event stream, so with these options sessions keep
// that stream open. When the elicitation
// handler accepts a form and leaves fields out, the client fills them in
// from the form's defaults before answering, and declares that it does
// (SEP-1034, elicitation.form.applyDefaults).
func WithClientOptions(opts ...mcpclient.ClientOption) Option {
	return optionFunc(func(o *options) { o.clientOptions = append(o.clientOptions, opts...) })
}

// WithRetryToolCall decides which tools may be sent again when it is unknown
// whether an earlier attempt ran. The tool is the one from the server's last
// tools/list, or a Tool with only a Name if the tool was never listed.
// Default: DefaultRetryToolCall.
func WithRetryToolCall(safe func(mcp.Tool) bool) Option {
	return optionFunc(func(o *options) {
		if safe == nil {
			o.invalidf("WithRetryToolCall(nil)")
			return
		}
		o.retryToolCall = safe
	})
}

// WithRetryableRPCCodes lists the JSON-RPC error codes that mean the server
// does not serve now, as a 503 does. A call that is safe to repeat
// (WithRetryToolCall; every method but tools/call) is sent again after the
// backoff's pause and a probe of its session, paid from the retry budget
// and not counted against WithMaxAttempts, for up to 10 s of pauses in
// all, within its deadline and while the budget lasts. A server that
// answers the probe serves: the code it answers the resend with is its
// answer, returned as is (a drain ends; a bug does not). When the pauses,
// the deadline or the budget end it, or if it is not safe to repeat, the
// call returns ErrOutcomeUnknown (the request reached a handler, which may
// have run it) with the server's error in the chain, never that error
// bare; a listing is then not answered stale (WithMaxStale). A
// session's handshake answered with one is tried again on the backoff
// schedule, and a probe so answered says nothing of the session. It
// replaces the list; none turns it off, and a code left out is the
// server's answer, returned as is. As in gRPC's retry policy
// (retryableStatusCodes), the codes are the caller's to choose: a code
// that means the request itself is wrong would only be refused again.
//
// Default: -32603 (internal error), which gateways in front of stdio
// servers answer to the requests in flight when the server process dies
// in a shutdown or restart, and which a replay on a live one answers.
// mcp-go's servers also answer it to any error of a tool's handler: a safe
// tool that fails every time answers after one pause, one probe and one
// resend; leave -32603 out to have such answers at once.
//
// mcp-go keeps the code of the errors it knows (-32700, -32600 to -32603,
// and MCP's own); a code it has no error value for is recognised only in an
// answer with an HTTP status of 400 or more, whose body the client reads.
func WithRetryableRPCCodes(codes ...int) Option {
	return optionFunc(func(o *options) { o.retryableRPC = slices.Clone(codes) })
}

// DefaultRetryToolCall allows a tool to be replayed when its annotations say
// it is read-only or idempotent. A tool never listed has no annotations and
// is never replayed.
func DefaultRetryToolCall(tool mcp.Tool) bool {
	a := tool.Annotations
	return a.ReadOnlyHint != nil && *a.ReadOnlyHint || a.IdempotentHint != nil && *a.IdempotentHint
}

// WithBearerToken authorizes every request with a token obtained elsewhere:
// token is called for the first token (rejected is "") and, when the server
// answers 401, with the token it refused, to get another. It is called once
// for every request refused with the same token, and the request is then
// sent again (a 401 means it did not run). Returning the refused token
// again, or an error, fails the call with ErrAuthorizationRequired. The
// token is sent only to the endpoint's origin (scheme, host and port), never
// to another one a redirect points to. Default none.
func WithBearerToken(token func(ctx context.Context, rejected string) (string, error)) Option {
	return optionFunc(func(o *options) {
		if token == nil {
			o.invalidf("WithBearerToken(nil)")
			return
		}
		o.bearerToken = token
	})
}

// WithStateHandler is told of every connectivity transition of the client,
// in order, on a goroutine of the client's (it may call the client). Default
// none.
func WithStateHandler(f func(from, to State)) Option {
	return optionFunc(func(o *options) { o.stateHandler = f })
}

// WithLogger receives structured logs of every reconnect and retry. Default:
// discarded.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l == nil {
			o.invalidf("WithLogger(nil)")
			return
		}
		o.logger = l
	})
}

// WithMaxResponseBytes is the largest answer the client reads: a response
// body, or one event of a response stream (a stream itself may run for as
// long as the call does). A larger answer ends the call at the limit,
// unread beyond it: the connection is dropped, and the call returns an error
// that is both ErrOutcomeUnknown and ErrResponseTooLarge, never sent again
// since the same answer would come back. The memory an answer costs is
// bounded by a small multiple of n: mcp-go holds an SSE event twice while
// reading it, and a JSON body in a buffer that doubles as it fills (2x to
// 3.5x n at its peak). Default 16 MiB.
func WithMaxResponseBytes(n int64) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.invalidf("WithMaxResponseBytes(%d): the limit must be positive", n)
		}
		o.maxResponseBytes = n
	})
}

func (o *options) validate() error {
	if o.httpClient != nil && o.wrapTransport != nil {
		o.invalidf("WithHTTPClient and WithTransportWrapper together: WithTransportWrapper wraps the client's own transport; wrap the one given instead")
	}
	if o.httpClient != nil && o.tlsConfig != nil {
		o.invalidf("WithHTTPClient and WithTLSConfig together: WithTLSConfig configures the client's own HTTP client; configure TLS in the one given instead")
	}
	if o.bearerToken != nil && o.oauth != nil {
		o.invalidf("WithOAuth and WithBearerToken together: one token source per client")
	}
	return o.invalid
}

// probeTimeout is how long one probe may take (a keepalive probe, a probe
// before a call, the check of a session whose event stream was refused):
// WithKeepAliveTimeout, else the health package's default for the keepalive
// interval (which the frozen prober of the tests does not change).
func (o *options) probeTimeout() time.Duration {
	if o.keepAliveTimeout > 0 {
		return o.keepAliveTimeout
	}
	return health.DefaultTimeout(o.keepAlive)
}

// WithCookies says whether each session keeps the cookies its server sets,
// and sends them back on the session's requests. Default true.
//
// Load balancers keep a client on a replica by a cookie they insert
// (HAProxy's "cookie SRV insert", AWS ALB stickiness, nginx's sticky
// cookie): dropped, every request lands on a replica that does not know
// the session (F39). Each session has a jar of its own (RFC 6265,
// net/http/cookiejar), made with the session and dropped with it, since
// the sessions of a pool may live on different replicas; a session opened
// after a loss starts with an empty jar, since the replica the old one
// named may be gone. A session whose server sets no cookie has no jar.
//
// With WithHTTPClient, an http.Client that has a Jar of its own keeps it:
// every session shares that jar, as the caller asked.
func WithCookies(keep bool) Option {
	return optionFunc(func(o *options) { o.noCookies = !keep })
}
