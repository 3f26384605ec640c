package client

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/health"
)

// observers is the fan-out to the WithObserver observers. The client holds
// nil when there are none, and every hook below is a method that returns
// at once on a nil receiver: the call path then allocates nothing and calls
// no interface for observation. Each hook into the call path is one line
// taking plain values, so that the path can change around it.
//
// An observers is immutable once New has made it, and safe for concurrent
// use.
type observers struct {
	list   []Observer
	meta   []MetaPropagator // those of list that carry context in _meta
	server Server           // the endpoint, as every CallInfo and event has it
	// deadlines are the client's, for calls made with a bare context: see
	// start.
	deadlines *sharedDeadlines
}

func newObservers(ob *observing, endpoint *url.URL) *observers {
	if ob == nil || len(ob.list) == 0 {
		return nil
	}
	list := ob.list
	o := &observers{list: list, server: Server{Name: ob.serverName, Address: endpoint.Hostname(), Transport: "tcp"}}
	o.server.Port, _ = strconv.Atoi(endpoint.Port())
	switch {
	case endpoint.Scheme == "stdio":
		o.server.Transport, o.server.Port = "pipe", 0
	case o.server.Port != 0:
	case endpoint.Scheme == "https":
		o.server.Port = 443
	default:
		o.server.Port = 80
	}
	for _, ob := range list {
		if mp, ok := ob.(MetaPropagator); ok {
			o.meta = append(o.meta, mp)
		}
	}
	return o
}

// share sets the client's shared deadlines, once New has made them.
func (o *observers) share(d *sharedDeadlines) {
	if o != nil {
		o.deadlines = d
	}
}

func (o *observers) event(ev Event) {
	for _, ob := range o.list {
		ob.HandleEvent(o.server, ev)
	}
}

// callKey finds a call's callTrace in the contexts derived from it.
type callKey struct{}

// callTrace is one call as its observers follow it. It is also the
// context the call runs under: the observers' contexts, answering for
// callKey without a second allocation (as the exchange does).
//
// Its attempts run one at a time, but a resend after a 401 starts one from
// the HTTP layer (auth.Transport), hence the mutex.
type callTrace struct {
	context.Context
	o *observers

	mu        sync.Mutex
	attempts  int
	next      AttemptReason   // of the next attempt
	wait      WaitKind        // what the next attempt waited for
	waitStart time.Time       // since when
	cur       context.Context // the attempt under way, nil between attempts
	session   string          // the attempt's session and its version, for a resend
	version   string
	requestID string // of the attempt's last request, if its body was read
	proto     string // HTTP version of the attempt's last response
	refused   bool   // a replay was refused
	fromCache bool   // answered from the cache (listings.Get)
	stale     bool   // ... in place of an error
	toolError bool   // the tools/call's result has IsError
	// lastType and lastCode are the ErrorType and RPCCode of the last
	// attempt's failure, "" once the call went on after it: the call's own
	// if it returns the server's answer as is.
	lastType string
	lastCode int
}

func (ct *callTrace) Value(key any) any {
	if key == (callKey{}) {
		return ct
	}
	return ct.Context.Value(key)
}

// traceOf is the callTrace of the call ctx belongs to, nil if none.
func traceOf(ctx context.Context) *callTrace {
	ct, _ := ctx.Value(callKey{}).(*callTrace)
	return ct
}

// aboutKey carries a call's prompt or resource from the method that knows
// it to startCall.
type aboutKey struct{}

type about struct{ prompt, uri string }

// prompt returns ctx telling the observers that the call is about prompt
// name. Without observers it is ctx.
func (o *observers) prompt(ctx context.Context, name string) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, aboutKey{}, about{prompt: name})
}

// resource is prompt for a resource's URI.
func (o *observers) resource(ctx context.Context, uri string) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, aboutKey{}, about{uri: uri})
}

// startCall tells the observers a call begins and returns the context it
// runs under: its callTrace.
func (o *observers) startCall(ctx context.Context, method, tool string) context.Context {
	if o == nil {
		return ctx
	}
	return o.start(ctx, method, tool)
}

func (o *observers) start(ctx context.Context, method, tool string) context.Context {
	if (ctx == context.Background() || ctx == context.TODO()) && o.deadlines != nil {
		// The deadline callContext would give the call, given here: once
		// wrapped in the observers' contexts, a bare context is no longer
		// seen as one, and each call would get a context and a timer of
		// its own (see sharedDeadlines).
		ctx = o.deadlines.get()
	}
	info := CallInfo{Method: method, Tool: tool, Server: o.server}
	if a, ok := ctx.Value(aboutKey{}).(about); ok {
		info.Prompt, info.ResourceURI = a.prompt, a.uri
	}
	for _, ob := range o.list {
		ctx = ob.StartCall(ctx, info)
	}
	return &callTrace{Context: ctx, o: o}
}

// endCall tells the observers how the call ctx (startCall's) ended.
func (o *observers) endCall(ctx context.Context, err error) {
	if o != nil {
		if ct, ok := ctx.(*callTrace); ok {
			ct.end(err)
		}
	}
}

func (ct *callTrace) end(err error) {
	ct.mu.Lock()
	end := CallEnd{Err: err, Attempts: ct.attempts, ReplayRefused: ct.refused, FromCache: ct.fromCache, Stale: ct.stale}
	toolError, lastType, lastCode := ct.toolError, ct.lastType, ct.lastCode
	ct.mu.Unlock()
	end.ErrorType, end.RPCCode = callErrorType(err, toolError, lastType, lastCode)
	for _, ob := range ct.o.list {
		ob.EndCall(ct.Context, end)
	}
}

// fromCache records that the call ctx (startCall's) is answered from the
// cache of listings, stale or within its ttl.
func (o *observers) fromCache(ctx context.Context, stale bool) {
	if o == nil {
		return
	}
	if ct, ok := ctx.(*callTrace); ok {
		ct.mu.Lock()
		ct.fromCache, ct.stale = true, stale
		ct.mu.Unlock()
	}
}

// callOf is the callTrace of the call run is running, nil if run runs for
// the client itself (its own listing of tools) or without observers.
func (o *observers) callOf(ctx context.Context) *callTrace {
	if o == nil {
		return nil
	}
	ct, _ := ctx.(*callTrace)
	return ct
}

// attempt tells the observers the call is about to be sent on s, and
// returns the context to send it under.
func (ct *callTrace) attempt(ctx context.Context, s *session) context.Context {
	if ct == nil {
		return ctx
	}
	return ct.startAttempt(ctx, s.mc.GetSessionId(), s.version, false)
}

func (ct *callTrace) startAttempt(ctx context.Context, session, version string, resend bool) context.Context {
	ct.mu.Lock()
	ct.attempts++
	info := AttemptInfo{Number: ct.attempts, Reason: ct.next, Session: session, ProtocolVersion: version, Waited: ct.wait, WaitStart: ct.waitStart}
	if resend {
		info.Reason, info.Waited, info.WaitStart = AttemptUnauthorized, WaitNone, time.Time{}
	}
	ct.wait, ct.waitStart = WaitNone, time.Time{}
	ct.session, ct.version = session, version
	ct.requestID, ct.proto = "", ""
	ct.mu.Unlock()
	for _, ob := range ct.o.list {
		ctx = ob.StartAttempt(ctx, info)
	}
	ct.mu.Lock()
	ct.cur = ctx
	ct.mu.Unlock()
	return ctx
}

// answered tells the observers that the attempt under way was answered.
func (ct *callTrace) answered() {
	if ct == nil {
		return
	}
	ct.endAttempt(nil, "", 0)
}

// attempted tells the observers that the attempt under way failed with
// err, which the policy classified as v (ctxErr is the caller's context's
// error, if it ended): its ErrorType is the verdict's (policy.ErrorType).
func (ct *callTrace) attempted(err error, v policy.Verdict, ctxErr error) {
	if ct == nil {
		return
	}
	errorType, code := policy.ErrorType(v, err, ctxErr)
	ct.endAttempt(err, errorType, code)
}

func (ct *callTrace) endAttempt(err error, errorType string, code int) {
	ct.mu.Lock()
	cur := ct.cur
	ct.cur = nil
	ct.lastType, ct.lastCode = errorType, code
	end := AttemptEnd{Err: err, ErrorType: errorType, RequestID: ct.requestID, NetworkProtocolVersion: ct.proto}
	ct.mu.Unlock()
	if cur == nil {
		return
	}
	for _, ob := range ct.o.list {
		ob.EndAttempt(cur, end)
	}
}

// retry records why the next attempt will be made: the last one's session
// expired (sessionExpired), or may have run (mayHaveRun), or neither (it
// was not sent); and what the call waits for first: a new session, if the
// last one was taken out of service (discard is not policy.NoLoss).
func (ct *callTrace) retry(sessionExpired, mayHaveRun bool, discard policy.Loss) {
	if ct == nil {
		return
	}
	reason := AttemptNotSent
	switch {
	case sessionExpired:
		reason = AttemptSessionExpired
	case mayHaveRun:
		reason = AttemptOutcomeUnknown
	}
	wait := WaitNone
	if discard != policy.NoLoss {
		wait = WaitRedial
		if discard.Reinitializes() {
			wait = WaitReinitialize
		}
	}
	ct.mu.Lock()
	ct.next = reason
	ct.lastType, ct.lastCode = "", 0
	if wait != WaitNone {
		ct.wait, ct.waitStart = wait, time.Now()
	}
	ct.mu.Unlock()
}

// replayRefused records that the call was not sent again because it is not
// safe to repeat.
func (ct *callTrace) replayRefused() {
	if ct == nil {
		return
	}
	ct.mu.Lock()
	ct.refused = true
	ct.mu.Unlock()
}

// toolResult records, from inside a tools/call's send, whether the tool
// reported its own failure (IsError).
func (o *observers) toolResult(ctx context.Context, res *mcp.CallToolResult) {
	if o == nil || res == nil || !res.IsError {
		return
	}
	if ct := traceOf(ctx); ct != nil {
		ct.mu.Lock()
		ct.toolError = true
		ct.mu.Unlock()
	}
}

// resendHook is the token layer's hook (auth.Transport.Resend): a request
// refused with status (401, 403) is sent again with a new token. Within a
// call, that ends the attempt and starts another. nil without observers.
func (o *observers) resendHook() func(ctx context.Context, status int) context.Context {
	if o == nil {
		return nil
	}
	return func(ctx context.Context, status int) context.Context {
		ct := traceOf(ctx)
		if ct == nil {
			return ctx
		}
		ct.mu.Lock()
		under, session, version := ct.cur != nil, ct.session, ct.version
		ct.mu.Unlock()
		if !under {
			return ctx // a probe before the call's attempt: not the call's send
		}
		err := errUnauthorized
		if status == 403 {
			err = errInsufficientScope
		}
		ct.endAttempt(err, policy.ResentErrorType(status), 0)
		return ct.startAttempt(ctx, session, version, true)
	}
}

var (
	errUnauthorized      = errors.New("the server refused the token (401); sent again with a new one")
	errInsufficientScope = errors.New("the server refused the token's scope (403 insufficient_scope); sent again with more")
)

// SawResponse (wire.Answered's) records the HTTP version of a response to a request of the
// attempt under way.
func (ct *callTrace) SawResponse(major, minor int) {
	proto := "1.1"
	switch {
	case major == 2:
		proto = "2"
	case major == 3:
		proto = "3"
	case major == 1 && minor == 0:
		proto = "1.0"
	}
	ct.mu.Lock()
	if ct.cur != nil {
		ct.proto = proto
	}
	ct.mu.Unlock()
}

// sentRequest records the JSON-RPC id of a request of the attempt under
// way.
func (ct *callTrace) sentRequest(id string) {
	ct.mu.Lock()
	if ct.cur != nil {
		ct.requestID = id
	}
	ct.mu.Unlock()
}

// Outside calls.

// sessionOpened tells the observers that s goes into service in place of
// prev (nil for a member's first), lost with lost (nil if it was not).
func (o *observers) sessionOpened(s, prev *session, lost *lostError) {
	if o == nil {
		return
	}
	reason := OpenKept
	if prev == s {
		s.loss.Store(nil)
	} else {
		reason = openReason(prev, lost)
	}
	o.event(SessionOpened{Session: s.mc.GetSessionId(), ProtocolVersion: s.version, Reason: reason})
}

// openReason is why a new session is opened in place of prev (nil for a
// member's first), lost with lost (nil if it was not).
func openReason(prev *session, lost *lostError) OpenReason {
	switch {
	case prev == nil || lost == nil:
		return OpenFirst
	case lost.kind == policy.LossRequested:
		return OpenRequested
	case lost.kind.Reinitializes():
		return OpenReinitialize
	}
	return OpenRedial
}

// lostInHandshake tells the observers of a session the server opened that
// expired before the handshake was over (F39): it was opened, lost as
// expired, and closed, all at once.
func (o *observers) lostInHandshake(hl *handshakeLostError, reason OpenReason) {
	if o == nil {
		return
	}
	o.event(SessionOpened{Session: hl.session, ProtocolVersion: hl.version, Reason: reason})
	o.event(SessionLost{Session: hl.session, Reason: LossExpired, Cause: hl.err})
	o.event(SessionClosed{Session: hl.session, ProtocolVersion: hl.version, Lost: LossExpired, Cause: hl.err})
}

// sessionLost tells the observers that s was taken out of service because
// of cause, and remembers why for its SessionClosed.
func (o *observers) sessionLost(s *session, cause error) {
	if o == nil {
		return
	}
	lost := &lostError{kind: policy.LossUnhealthy, err: cause}
	errors.As(cause, &lost)
	s.loss.Store(lost)
	o.event(SessionLost{Session: s.mc.GetSessionId(), Reason: lossReason(lost.kind), Cause: lost.err})
}

func lossReason(k policy.Loss) LossReason {
	switch k {
	case policy.LossExpired:
		return LossExpired
	case policy.LossUnreachable:
		return LossUnreachable
	case policy.LossCorrupt:
		return LossCorrupt
	case policy.LossRequested:
		return LossRequested
	}
	return LossUnhealthy
}

// probed tells the observers of a probe of s that answered, or failed with
// err.
func (o *observers) probed(s *session, err error) {
	if o == nil {
		return
	}
	o.event(Probed{Session: s.mc.GetSessionId(), Err: err, Busy: errors.As(err, new(*health.BusyError))})
}

// dialFailed tells the observers that opening a session failed.
func (o *observers) dialFailed(err error, retryIn time.Duration) {
	if o == nil {
		return
	}
	o.event(DialFailed{Err: err, RetryIn: retryIn})
}

// renewalHook is the OAuth token layer's hook (auth.Env.OnRenewal); nil
// without observers.
func (o *observers) renewalHook() func(refresh bool, err error) {
	if o == nil {
		return nil
	}
	return func(refresh bool, err error) {
		o.event(TokenRenewed{Refresh: refresh, Err: err, ErrorType: auth.ReasonOf(err)})
	}
}

// noteMember tells the observers, in order and from the state notifier's
// goroutine (this runs under the client's locks), that a pool member's
// state is now st.
func (c *ResilientClient) noteMember(m *memberState, st State) {
	if c.obs == nil {
		return
	}
	if from := State(m.observed.Swap(int32(st))); from != st {
		c.notifier.push(stateEvent{from: from, to: st, member: true})
	}
}

// breakerChanged delivers the circuit breaker's opening or closing, on the
// notifier's goroutine.
func (o *observers) breakerChanged(b BreakerState) {
	if o != nil {
		o.event(b)
	}
}

// memberChanged delivers a member's change of state, on the notifier's
// goroutine.
func (o *observers) memberChanged(from, to State) {
	o.event(SessionState{From: from, To: to})
}

// Error classes.

// callErrorType is the class of a call's error, as CallEnd documents it,
// and the JSON-RPC code when the class is one: the library's class of the
// error the call returns; when it returns the server's answer as is, the
// class the policy gave the attempt that met it (lastType, lastCode); and
// when no attempt did (opening a session met it), its JSON-RPC code.
func callErrorType(err error, toolError bool, lastType string, lastCode int) (string, int) {
	switch {
	case err == nil && toolError:
		return "tool_error", 0
	case err == nil:
		return "", 0
	case errors.Is(err, ErrOutcomeUnknown):
		return "outcome_unknown", 0
	case errors.Is(err, ErrUnavailable):
		return "unavailable", 0
	case errors.Is(err, ErrAuthorizationRequired):
		return "authorization_required", 0
	case errors.As(err, new(*InsufficientScopeError)):
		return "insufficient_scope", 0
	case errors.Is(err, ErrClosed):
		return "closed", 0
	case lastType != "":
		return lastType, lastCode
	}
	if code, ok := policy.RPCCode(err); ok {
		return strconv.Itoa(code), code
	}
	return "_OTHER", 0
}
