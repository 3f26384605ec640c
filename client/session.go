package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/affinity"
	"github.com/resilientmcp/resilientmcp/client/internal/breaker"
	"github.com/resilientmcp/resilientmcp/client/internal/hotpath"
	"github.com/resilientmcp/resilientmcp/client/internal/notify"
	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/sse"
	"github.com/resilientmcp/resilientmcp/client/internal/stdio"
	"github.com/resilientmcp/resilientmcp/client/internal/streamable"
	"github.com/resilientmcp/resilientmcp/client/internal/transitions"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/health"
	"github.com/resilientmcp/resilientmcp/pool"
)

// sessions is the life of a client's sessions, kept apart from the
// client as grpc-go keeps addrConn (one connection's life) apart from
// ClientConn: the pool of sessions and all a session goes through from
// its dial to its close. It dials, opens and negotiates them (Streamable
// HTTP, HTTP+SSE, a stdio server's process: dialers.go), probes
// them and keeps them alive (health.go), trips the circuit breaker
// (breaker.go, client/internal/breaker), holds the verdicts of no affinity (client/internal/affinity), and
// computes the connectivity state and tells it (state.go). The call path
// asks it for a session (pool), tells it each outcome (noteOutcome,
// replace, answered), and nothing more.
//
// What it needs of the rest of the client (the options, the logger, the
// HTTP client, the observers and counters, and what a new session is
// given: its subscriptions restored, its listings, the tools' cache) it
// reads through c, as addrConn reads its ClientConn's. It lives inside
// the client, a value rather than a pointer: no allocation of its own
// for each of thousands of idle clients (BenchmarkIdleClients).
//
// It is safe for concurrent use. Lock order, outermost first:
//
//   - pool.Pool.mu (held when the pool calls onMemberState) → stateMu →
//     notifier.mu (transitions.Notifier's);
//   - pool.Pool.mu → breaker.Breaker.mu (Reached, from onMemberState) →
//     notifier.mu (the breaker's openings and closings, in order).
//
// The stdio supervisor's locks are leaves (stdio.Supervisor), as are the
// health monitors' of the sessions. No user code runs under any of them: the
// notifier calls the handlers from its own goroutine.
type sessions struct {
	c *ResilientClient // the client they serve; set by init, then read only

	pool    *pool.Pool[*session]
	initReq atomic.Pointer[mcp.InitializeRequest] // Initialize's, or made from WithClientInfo (initRequest)

	stdio *stdio.Supervisor // NewStdio's processes (dialers.go, client/internal/stdio); nil over HTTP

	// spoken is what the endpoint was last found to speak: speaksStateless
	// (or not known yet), speaksSessionEra (the last session negotiated
	// opened in the session era), speaksSSE (HTTP+SSE: NewSSE's, or found
	// by WithSSEFallback, for good). One word for the three, for the size
	// of the client (TestClientSizeClass).
	spoken   atomic.Int32
	affinity affinity.Tracker                // the verdicts of no affinity (client/internal/affinity)
	brk      atomic.Pointer[breaker.Breaker] // WithFailFastAfter's circuit breaker, made on the first outage (outage)

	stateMu  sync.Mutex           // orders state computations and their notifications
	state    atomic.Int32         // State, as last computed
	members  []memberState        // by pool member
	notifier transitions.Notifier // the state notifier (client/internal/transitions)
}

// init makes the pool of c's sessions and what goes with it: the state
// notifier and a state per member. target names the server in the log.
func (ss *sessions) init(c *ResilientClient, target string) {
	o := &c.opts
	ss.c = c
	ss.notifier.Init((*notifierHost)(c))
	ss.members = make([]memberState, o.poolSize)
	ss.pool = pool.New(ss.poolConfig(target))
}

// poolConfig is the configuration of the client's pool of sessions: how
// a member's session is dialed (dial) and released (closeSession), and
// what the pool asks the client of a failure. target names the server in
// the log.
func (ss *sessions) poolConfig(target string) pool.Config[*session] {
	o := &ss.c.opts
	return pool.Config[*session]{
		Size:       o.poolSize,
		Dial:       ss.dial,
		NewBackOff: o.newBackOff,
		Release:    ss.closeSession,
		OnState:    ss.onMemberState,
		// An expired session answers what is in flight on it itself
		// (404, 400): it is closed when they are done. A dead, hung or
		// corrupt one is closed at once, which ends what is in flight
		// (F5, F18) so that safe calls are sent again.
		Drain: func(cause error) bool {
			var lost *lostError
			return errors.As(cause, &lost) && lost.kind.Drains()
		},
		RetryAfter: func(err error) time.Duration {
			var busy *health.BusyError
			if errors.As(err, &busy) {
				return busy.After
			}
			return 0
		},
		StopWaiting: ss.whileNoSession,
		OnDialError: func(member int, err error, next time.Duration) {
			if na := new(affinity.Error); errors.As(err, &na) && !na.Report {
				return // said once (noteLossForAffinity)
			}
			ss.c.log.Warn("dial failed", "endpoint", target, "member", member, "err", err, "retry_in", next)
			ss.c.obs.DialFailed(err, next)
			ss.noteOutcome(dialVerdict(err, ss.c.closed.Load()))
		},
	}
}

// initRequest is the request sessions are initialized with: the caller's
// from Initialize, or one built from WithClientInfo.
func (ss *sessions) initRequest() *mcp.InitializeRequest {
	if r := ss.initReq.Load(); r != nil {
		return r
	}
	r := &mcp.InitializeRequest{}
	r.Params.ClientInfo = ss.c.opts.implementation()
	if ss.initReq.CompareAndSwap(nil, r) {
		return r
	}
	return ss.initReq.Load()
}

// transportOptions are the options of a session's mcp-go transport, made
// for each dial rather than kept: an idle client would hold them, and
// their closures, for good (BenchmarkIdleClients).
func (ss *sessions) transportOptions() []transport.StreamableHTTPCOption {
	topts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(ss.c.httpClient),
		transport.WithHTTPHeaders(ss.c.opts.headers),
		transport.WithHTTPLogger(ss.c.opts.logger),
	}
	if ss.c.opts.headerFunc != nil {
		topts = append(topts, transport.WithHTTPHeaderFunc(ss.c.opts.headerFunc))
	}
	return topts
}

// session is one generation: an mcp-go client and its transport, initialized
// once. It is never initialized again: mcp-go's Initialize races with calls
// other goroutines make on the same client, so a new generation is a new
// session and the old one is closed.
type session struct {
	mc         *mcpclient.Client
	sessionEra bool // negotiated a revision up to 2025-11-25: Mcp-Session-Id, ping
	version    string
	result     *mcp.InitializeResult
	request    *mcp.InitializeRequest         // the request it was opened with
	monitor    atomic.Pointer[health.Monitor] // set when the session goes into service; see health()
	member     int                            // the pool member it serves as
	serial     uint64                         // the order it went into service in; see dial
	lost       atomic.Bool                    // OnConnectionLost was told of its loss
	loss       observers.Lost                 // why it was taken out of service, for the observers
	opened     time.Time                      // when it was initialized
	// served: the server has answered a request carrying the session's
	// id, so it accepted the id; a 400 to it later means the server lost
	// it (F26), where a 400 before is an answer about the request.
	served atomic.Bool
	// answers counts the requests it answered, up to
	// policy.ProvenAnswers: whether its replica keeps it (answered).
	answers atomic.Int32
	proc    *stdio.Process // a stdio server's process, one per session (client/internal/stdio); nil over HTTP

	hot *hotpath.Writer // how the client writes a tools/call itself (client/internal/hotpath); nil: mcp-go writes them

	ctx    context.Context // ends at close; the listen stream runs under it
	cancel context.CancelFunc
	// streams: its GET event stream and its subscriptions/listen stream
	// (client/internal/notify).
	streams notify.Streams
}

// health is the session's monitor. It is set before the session goes into
// service and replaced only while the session is out of it, but calls that
// leased it earlier may still be reading it, hence the atomic pointer.
func (s *session) health() *health.Monitor { return s.monitor.Load() }

// markServed records that the server answered a request on the session.
// Read first: after the first answer it is a load, not a store every call
// makes to a shared line.
func (s *session) markServed() {
	if !s.served.Load() {
		s.served.Store(true)
	}
}

// policy is what the policy needs to know of s.
func (s *session) policy() policy.Session {
	p := policy.Session{SessionEra: s.sessionEra, Served: s.served.Load()}
	if t := s.sse(); t != nil {
		// The session is its stream's, named in its endpoint's URL.
		p.SessionInURL, p.StreamLost = true, t.Lost() != nil
	} else {
		p.Sessionless = s.proc == nil && s.mc.GetSessionId() == ""
	}
	return p
}

// sse is an HTTP+SSE session's transport (client/internal/sse), nil for any other:
// read from mcp-go's client rather than kept, which would cost every
// session of every client a field (BenchmarkIdleClients).
func (s *session) sse() *sse.Transport {
	t, _ := s.mc.GetTransport().(*sse.Transport)
	return t
}

func (s *session) close() {
	s.cancel()
	s.streams.Wait()
	if m := s.monitor.Load(); m != nil {
		m.Stop()
	}
	_ = s.mc.Close()
	if s.proc != nil {
		s.proc.Stop() // stdin closed, SIGTERM, SIGKILL, to its process group
	}
}

// lostError is the cause a session was taken out of service with; the dial
// that follows reads its kind.
type lostError struct {
	kind policy.Loss
	err  error
}

func (e *lostError) Error() string { return wire.Describe(e.err) }
func (e *lostError) Unwrap() error { return e.err }

var errReinitializeRequested = errors.New("initialize called with a new request")

// handshakeLostError is the error of a session the server handed out that
// expired before the handshake was over: initialize was answered with a
// session id, and the initialized notification that followed met a 404
// (F39: behind a load balancer without affinity, another replica got it).
// The session was opened, and lost young.
type handshakeLostError struct {
	session, version string
	err              error
}

func (e *handshakeLostError) Error() string { return wire.Describe(e.err) }
func (e *handshakeLostError) Unwrap() error { return e.err }

// openError is a failed handshake's error, with its classification.
type openError struct {
	verdict policy.Verdict
	err     error
}

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

// dial is the pool's DialFunc, for a member's first session and for every
// reconnect: the loss told once (observers, OnConnectionLost, Stats, the
// affinity verdict), nextSession, and what the parity methods need of each
// session put into service.
func (ss *sessions) dial(ctx context.Context, member int, prev *session, cause error) (*session, error) {
	// The pool dials again and again for one loss while the server is
	// away; the loss is news only the first time.
	if prev != nil && cause != nil && prev.lost.CompareAndSwap(false, true) {
		ss.c.obs.SessionLost(prev, cause)
		ss.notifyConnectionLost(cause)
		kind := policy.LossUnhealthy
		if lost := new(lostError); errors.As(cause, &lost) {
			kind = lost.kind
		}
		ss.c.stats.Lost(kind)
		young := policy.YoungLoss(kind, prev.sessionEra, prev.answers.Load(), time.Since(prev.opened))
		if verdict := ss.noteLossForAffinity(member, young, cause); verdict != nil {
			// Not opening another: the deployment's sessions expire as
			// fast as they are opened (F39).
			return nil, backoff.Permanent(verdict)
		}
	}
	s, err := ss.nextSession(ctx, member, prev, cause)
	if err != nil {
		return nil, err
	}
	switch {
	case s == prev:
		// Only the network failed and the session survived: it goes back
		// into service, and losing it again is another loss.
		prev.lost.Store(false)
	case prev != nil || cause != nil:
		// A session in place of a lost one: the server behind it may have
		// restarted, and what the old one said (a listing's cursor) may mean
		// nothing to it.
		s.serial = ss.c.parity.serials.Add(1)
	default:
		// A member's first session, as when a pool fills: the same server
		// as its siblings'.
		s.serial = ss.c.parity.serials.Load()
	}
	ss.c.parity.last.Store(s)
	return s, nil
}

// noteLossForAffinity counts a session of member lost (young, for cause)
// towards a verdict of no affinity (client/internal/affinity), and returns
// the verdict's error if there is one now; the first is logged.
func (ss *sessions) noteLossForAffinity(member int, young bool, cause error) error {
	v := ss.affinity.Lost(&ss.members[member].affinity, young, cause)
	if v == nil {
		return nil
	}
	if v.Report {
		ss.c.log.Error("the deployment needs session affinity: sessions expire within their first requests; calls fail with ErrNoAffinity, and a session is tried again every "+policy.NoAffinityHold.String(),
			"endpoint", ss.c.endpoint, "member", member, "sessions_lost_young", v.Young, "last", wire.Describe(cause))
	}
	return v
}

// answered counts an answer on s, up to what proves that its replica keeps
// it: from then on it is one atomic load a call.
func (ss *sessions) answered(s *session) {
	if s.answers.Load() < policy.ProvenAnswers && s.answers.Add(1) == policy.ProvenAnswers {
		ss.affinity.Proven(&ss.members[s.member].affinity)
	}
}

// notifyConnectionLost tells the OnConnectionLost handlers of a session
// taken out of service, unless the caller asked for it (Initialize with
// another request) or the client is closing.
func (ss *sessions) notifyConnectionLost(cause error) {
	var lost *lostError
	if errors.As(cause, &lost) {
		if lost.kind == policy.LossRequested {
			return
		}
		cause = lost // its message says what mcp-go says twice once
	}
	if !ss.c.closed.Load() {
		ss.notifier.NotifyLost(cause)
	}
}

// current is the session in service, or the last one if none is (a
// reconnect is under way), or nil before the first.
func (ss *sessions) current() *session {
	if vs := ss.pool.Values(); len(vs) > 0 {
		return vs[0]
	}
	return ss.c.parity.last.Load()
}

// closeSession is the pool's Release: it ends s.
func (ss *sessions) closeSession(s *session) {
	ss.c.obs.SessionClosed(s, s.opened)
	s.close()
}

// connectTimeout bounds one dial (opening a session), so that a server that
// accepts connections and never answers cannot stall a reconnect loop. It is
// gRPC's minimum connect timeout.
const connectTimeout = 20 * time.Second

// nextSession is the session that follows prev in member, for dial: prev
// itself, back in service, if the server could not be reached and the session
// survived it; else a new session (a member's first, a re-initialization or a
// redial).
func (ss *sessions) nextSession(ctx context.Context, member int, prev *session, cause error) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var lost *lostError
	errors.As(cause, &lost)
	if err := ss.members[member].affinity.Held(); err != nil {
		// No session is opened while a verdict of no affinity holds:
		// callers fail at once (F39).
		return nil, backoff.Permanent(err)
	}
	// The server could not be reached: once it answers, ask whether the
	// session survived before opening another.
	if prev != nil && lost != nil && lost.kind == policy.LossUnreachable &&
		policy.KeepThroughOutage(prev.policy()) {
		err := ss.checkSession(ctx, prev)
		if err == nil {
			ss.c.log.Info("server reachable again; session kept", "version", prev.version)
			ss.c.obs.SessionOpened(prev, observe.OpenKept)
			ss.c.listings.RefreshTools(ctx, prev.listed())
			if prev.health().Unhealthy() {
				ss.watch(prev) // its prober gave up while the server was away
			}
			return prev, nil
		}
		pe := new(probeError)
		if !errors.As(err, &pe) {
			return nil, err
		}
		switch policy.AfterRecheck(pe.verdict, ss.c.opts.retryableRPC) {
		case policy.StillAway:
			return nil, err
		case policy.StopDialing:
			return nil, backoff.Permanent(err)
		}
		// It answers, and not as a live session would: open another.
		lost = &lostError{kind: policy.LossExpired, err: err}
	}
	var s *session
	var err error
	switch {
	case ss.stdio != nil:
		s, err = ss.openStdio(ctx, member, ss.initRequest())
	case ss.spoken.Load() == speaksSSE:
		s, err = ss.openSSE(ctx, ss.initRequest())
	default:
		s, err = ss.openFallingBack(ctx)
	}
	if hl := new(handshakeLostError); errors.As(err, &hl) {
		ss.c.obs.LostInHandshake(hl.session, hl.version, hl.err, openReason(prev, lost))
		ss.c.stats.Lost(policy.LossExpired)
		if verdict := ss.noteLossForAffinity(member, policy.YoungLoss(policy.LossExpired, true, 0, 0), hl); verdict != nil {
			return nil, backoff.Permanent(verdict)
		}
	}
	if err != nil {
		return nil, err
	}
	s.member = member
	if err := ss.c.messages.Restore(ctx, s); err != nil {
		s.close()
		return nil, err
	}
	switch {
	case prev == nil || lost == nil || lost.kind == policy.LossRequested:
	case lost.kind == policy.LossExpired:
		ss.c.stats.Reinitializations.Add(1)
		ss.c.log.Info("session re-initialized", "cause", lost.err, "version", s.version)
	default:
		ss.c.stats.Redials.Add(1)
		ss.c.log.Info("session redialed", "cause", lost.err, "version", s.version)
	}
	reason := openReason(prev, lost)
	ss.c.obs.SessionOpened(s, reason)
	ss.c.listings.Opened(ctx, prev.listed(), s.listed(), reason == observe.OpenReinitialize || reason == observe.OpenRequested)
	ss.watch(s)
	return s, nil
}

// probe asks the server whether the session is alive: ping in the session
// era; server/discover in the stateless one, where ping no longer exists (and
// mcp-go's Ping sends nothing).
func (ss *sessions) probe(ctx context.Context, s *session) (policy.Verdict, error) {
	ex := wire.NewExchange()
	pctx := ex.Bind(ctx)
	var err error
	if s.sessionEra {
		//lint:ignore SA1019 ping is the session era's probe; the stateless era is probed with server/discover instead
		err = s.mc.Ping(pctx)
	} else {
		_, err = s.mc.Discover(pctx, mcp.DiscoverRequest{})
	}
	if err == nil {
		return policy.Verdict{}, nil
	}
	return policy.Classify(err, s.policy(), ex, ctx.Err() != nil), err
}

// open opens and initializes a session.
//
// The protocol era is remembered per client: an endpoint that spoke the
// session era gets initialize at once, without the server/discover that
// mcp-go sends first and a session-era server answers with 400, one round
// trip per connect. A restarted server may have been upgraded or rolled back
// (F13): if it refuses the handshake with an error no retry can fix, the era
// is negotiated afresh, as it is on a client's first connect and whenever
// the endpoint spoke the stateless era, where server/discover is the
// handshake. A server upgraded to speak both eras goes on being spoken to
// in the session era by a client that knew it so.
//
// In the session era, mcp-go carries server notifications on a GET stream
// that it opens only on a transport made to listen; such sessions are opened
// that way, also while the era is being negotiated (streamable.Transport's
// RequiresLegacyProtocol): one session on the first connect, not one to
// learn the era and another to listen.
func (ss *sessions) open(ctx context.Context) (*session, error) {
	req := ss.initRequest()
	listen := ss.c.messages.WantsEventStream()
	if ss.spoken.Load() == speaksSessionEra {
		s, _, err := ss.openWith(ctx, req, sessionEraOnly, listen)
		if err == nil || !isPermanent(err) {
			return s, err
		}
		ss.c.log.Info("session handshake refused; negotiating the protocol era again", "err", err)
	}
	s, err := ss.negotiate(ctx, req, listen)
	if err != nil {
		return nil, err
	}
	era := speaksStateless
	if s.sessionEra {
		era = speaksSessionEra
	}
	// Never over an HTTP+SSE finding (WithSSEFallback), which is for good.
	for cur := ss.spoken.Load(); cur != speaksSSE && !ss.spoken.CompareAndSwap(cur, era); cur = ss.spoken.Load() {
	}
	return s, nil
}

// sessionEraOnly keeps mcp-go on the initialize handshake, without
// server/discover. It goes before the caller's client options, so that a
// protocol version the caller pinned still wins.
var sessionEraOnly = mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)

// negotiate opens a session the way mcp-go decides the era: server/discover
// first, initialize if that fails. listen: as openWith's.
func (ss *sessions) negotiate(ctx context.Context, req *mcp.InitializeRequest, listen bool) (*session, error) {
	s, discovered, err := ss.openWith(ctx, req, nil, listen)
	if err != nil || s.sessionEra {
		return s, err
	}
	// mcp-go takes any answer to server/discover as proof of the stateless
	// era. An older server that answers unknown methods with an empty result
	// would then never see initialize: believe the era only if the server
	// listed the version. The answer mcp-go had is read back from the
	// transport; only if it could not be is the server asked again.
	if discovered == nil {
		discovered, err = s.mc.Discover(wire.NewExchange().Bind(ctx), mcp.DiscoverRequest{})
	}
	if err == nil && slices.Contains(discovered.SupportedVersions, s.version) {
		return s, nil
	}
	s.close()
	if err != nil && !policy.AnsweredByServer(err, policy.Session{}) {
		return nil, fmt.Errorf("confirming protocol version %s: %w", s.version, err)
	}
	ss.c.log.Info("server/discover did not list the negotiated version; using initialize", "version", s.version)
	s, _, err = ss.openWith(ctx, req, sessionEraOnly, listen)
	return s, err
}

func isPermanent(err error) bool {
	var p *backoff.PermanentError
	return errors.As(err, &p)
}

// openWith opens a session, with extra applied before the caller's client
// options, and a transport that listens for the GET event stream if listen
// is set. It returns what server/discover answered during the handshake, if
// it was asked and its answer could be read.
func (ss *sessions) openWith(ctx context.Context, req *mcp.InitializeRequest, extra mcpclient.ClientOption, listen bool) (*session, *mcp.DiscoverResult, error) {
	ex := wire.NewExchange()
	ctx = ex.Bind(ctx)
	topts := ss.transportOptions()
	hc := ss.c.httpClient
	if own := wire.SessionClient(hc, !ss.c.opts.noCookies); own != nil {
		// After the shared client's option: the last one given wins.
		hc = own
		topts = append(slices.Clip(topts), transport.WithHTTPBasicClient(hc))
	}
	if listen {
		//lint:ignore SA1019 the session era carries server notifications and requests on the GET stream only
		topts = append(slices.Clip(topts), transport.WithContinuousListening())
	}
	st, err := transport.NewStreamableHTTP(ss.c.endpoint, topts...)
	if err != nil {
		return nil, nil, backoff.Permanent(err)
	}
	tr := streamable.New(st, &ss.c.listings)
	opts := ss.c.opts.clientOptions
	if extra != nil {
		opts = append([]mcpclient.ClientOption{extra}, opts...)
	}
	mc := mcpclient.NewClient(transportFor(tr, ss.c.elicitationDefaults), opts...)
	// mcp-go's event stream, if it listens, goes out under this context:
	// the tracker tells the watch how the server answers it.
	startCtx, watch := ss.c.messages.WatchStream(ss.c.lifetime)
	if err := mc.Start(startCtx); err != nil {
		return nil, nil, err
	}
	mc.OnNotification(ss.c.messages.Handle)
	res, err := mc.Initialize(ctx, *req)
	discovered := tr.TakeDiscovered()
	if err != nil {
		// initialize was answered with a session id: the server opened
		// a session, and what failed came after, on that session.
		opened := policy.Session{}
		lostID, answered := tr.OpenedSession()
		if answered && lostID != "" {
			ss.c.stats.SessionsOpened.Add(1)
			opened = policy.Session{SessionEra: !mcp.IsModernProtocol(mc.ProtocolVersion()), Served: true}
		}
		lostVersion := mc.ProtocolVersion()
		_ = mc.Close()
		v := policy.Classify(err, opened, ex, ctx.Err() != nil)
		if v.Class == policy.Expired && opened.Served && !v.Renegotiate {
			// Not an answer to the handshake: the session expired, and
			// another is opened on the backoff schedule.
			return nil, nil, &handshakeLostError{session: lostID, version: lostVersion, err: fmt.Errorf("initialize: the session the server had just opened expired: %w", err)}
		}
		if v.Cause != nil {
			err = v.Cause
		}
		err = &openError{verdict: v, err: fmt.Errorf("initialize: %w", err)}
		if v.Busy {
			// The pool's dial loop waits as long as the server asked (F30).
			return nil, nil, &health.BusyError{After: v.RetryAfter, Err: err}
		}
		// Initialize is safe to repeat, so only an error no retry can fix
		// ends the loop.
		if policy.DialEnds(v, ss.c.opts.retryableRPC) {
			return nil, nil, backoff.Permanent(err)
		}
		return nil, nil, err
	}
	ss.c.stats.SessionsOpened.Add(1)
	version := mc.ProtocolVersion()
	s := &session{
		mc:         mc,
		sessionEra: !mcp.IsModernProtocol(version),
		version:    version,
		result:     res,
		request:    req,
		opened:     time.Now(),
	}
	s.streams.SetListening(listen && s.sessionEra) // the stateless era has no GET stream
	s.hot = newHotPath(ss.c, tr, hc)
	s.streams.Watch(watch, s)
	// Not derived from ss.c.lifetime: close ends it, and the pool closes every
	// session, at Close too; a child of the client's context would only
	// leave a map of children behind in it, for every client.
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, discovered, nil
}
