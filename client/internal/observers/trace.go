package observers

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/observe"
)

// callKey finds a call's Trace in the contexts derived from it.
type callKey struct{}

// Trace is one call as its observers follow it. It is also the context
// the call runs under: the observers' contexts, answering for callKey
// without a second allocation (as the exchange does). Its hooks return at
// once on a nil Trace (a call without observers, or the client's own).
//
// Its attempts run one at a time, but a resend after a 401 starts one from
// the HTTP layer (auth.Transport), hence the mutex.
type Trace struct {
	context.Context
	o *Set

	mu        sync.Mutex // a leaf
	attempts  int
	next      observe.AttemptReason // of the next attempt
	wait      observe.WaitKind      // what the next attempt waited for
	waitStart time.Time             // since when
	cur       context.Context       // the attempt under way, nil between attempts
	session   string                // the attempt's session and its version, for a resend
	version   string
	requestID string // of the attempt's last request, if its body was read
	proto     string // HTTP version of the attempt's last response
	refused   bool   // a replay was refused
	fromCache bool   // answered from the cache (the client's listings.go)
	stale     bool   // ... in place of an error
	toolError bool   // the tools/call's result has IsError
	// lastType and lastCode are the ErrorType and RPCCode of the last
	// attempt's failure, "" once the call went on after it: the call's own
	// if it returns the server's answer as is.
	lastType string
	lastCode int
}

// Value answers for callKey with ct itself.
func (ct *Trace) Value(key any) any {
	if key == (callKey{}) {
		return ct
	}
	return ct.Context.Value(key)
}

// traceOf is the Trace of the call ctx belongs to, nil if none.
func traceOf(ctx context.Context) *Trace {
	ct, _ := ctx.Value(callKey{}).(*Trace)
	return ct
}

// aboutKey carries a call's prompt or resource from the method that knows
// it to StartCall.
type aboutKey struct{}

type about struct{ prompt, uri string }

// Prompt returns ctx telling the observers that the call is about prompt
// name. Without observers it is ctx.
func (o *Set) Prompt(ctx context.Context, name string) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, aboutKey{}, about{prompt: name})
}

// Resource is Prompt for a resource's URI.
func (o *Set) Resource(ctx context.Context, uri string) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, aboutKey{}, about{uri: uri})
}

// StartCall tells the observers a call begins and returns the context it
// runs under: its Trace.
func (o *Set) StartCall(ctx context.Context, method, tool string) context.Context {
	if o == nil {
		return ctx
	}
	return o.start(ctx, method, tool)
}

func (o *Set) start(ctx context.Context, method, tool string) context.Context {
	if (ctx == context.Background() || ctx == context.TODO()) && o.deadlines != nil {
		// The deadline the client would give the call, given here: once
		// wrapped in the observers' contexts, a bare context is no longer
		// seen as one, and each call would get a context and a timer of
		// its own (see the client's sharedDeadlines).
		ctx = o.deadlines()
	}
	info := observe.CallInfo{Method: method, Tool: tool, Server: o.server}
	if a, ok := ctx.Value(aboutKey{}).(about); ok {
		info.Prompt, info.ResourceURI = a.prompt, a.uri
	}
	for _, ob := range o.list {
		ctx = ob.StartCall(ctx, info)
	}
	return &Trace{Context: ctx, o: o}
}

// EndCall tells the observers how the call ctx (StartCall's) ended.
func (o *Set) EndCall(ctx context.Context, err error) {
	if o != nil {
		if ct, ok := ctx.(*Trace); ok {
			ct.end(err)
		}
	}
}

func (ct *Trace) end(err error) {
	ct.mu.Lock()
	end := observe.CallEnd{Err: err, Attempts: ct.attempts, ReplayRefused: ct.refused, FromCache: ct.fromCache, Stale: ct.stale}
	toolError, lastType, lastCode := ct.toolError, ct.lastType, ct.lastCode
	ct.mu.Unlock()
	class := ""
	if err != nil && ct.o.class != nil {
		class = ct.o.class(err)
	}
	end.ErrorType, end.RPCCode = callErrorType(err, class, toolError, lastType, lastCode)
	for _, ob := range ct.o.list {
		ob.EndCall(ct.Context, end)
	}
}

// FromCache records that the call ctx (StartCall's) is answered from the
// cache of listings, stale or within its ttl.
func (o *Set) FromCache(ctx context.Context, stale bool) {
	if o == nil {
		return
	}
	if ct, ok := ctx.(*Trace); ok {
		ct.mu.Lock()
		ct.fromCache, ct.stale = true, stale
		ct.mu.Unlock()
	}
}

// CallOf is the Trace of the call running under ctx, nil if it runs for
// the client itself (its own listing of tools) or without observers.
func (o *Set) CallOf(ctx context.Context) *Trace {
	if o == nil {
		return nil
	}
	ct, _ := ctx.(*Trace)
	return ct
}

// Attempt tells the observers the call is about to be sent on s, and
// returns the context to send it under.
func (ct *Trace) Attempt(ctx context.Context, s Session) context.Context {
	if ct == nil {
		return ctx
	}
	id, version, _ := s.Observed()
	return ct.startAttempt(ctx, id, version, false)
}

func (ct *Trace) startAttempt(ctx context.Context, session, version string, resend bool) context.Context {
	ct.mu.Lock()
	ct.attempts++
	info := observe.AttemptInfo{Number: ct.attempts, Reason: ct.next, Session: session, ProtocolVersion: version, Waited: ct.wait, WaitStart: ct.waitStart}
	if resend {
		info.Reason, info.Waited, info.WaitStart = observe.AttemptUnauthorized, observe.WaitNone, time.Time{}
	}
	ct.wait, ct.waitStart = observe.WaitNone, time.Time{}
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

// Answered tells the observers that the attempt under way was answered.
func (ct *Trace) Answered() {
	if ct == nil {
		return
	}
	ct.endAttempt(nil, "", 0)
}

// Attempted tells the observers that the attempt under way failed with
// err, which the policy classified as v (ctxErr is the caller's context's
// error, if it ended): its ErrorType is the verdict's (policy.ErrorType).
func (ct *Trace) Attempted(err error, v policy.Verdict, ctxErr error) {
	if ct == nil {
		return
	}
	errorType, code := policy.ErrorType(v, err, ctxErr)
	ct.endAttempt(err, errorType, code)
}

func (ct *Trace) endAttempt(err error, errorType string, code int) {
	ct.mu.Lock()
	cur := ct.cur
	ct.cur = nil
	ct.lastType, ct.lastCode = errorType, code
	end := observe.AttemptEnd{Err: err, ErrorType: errorType, RequestID: ct.requestID, NetworkProtocolVersion: ct.proto}
	ct.mu.Unlock()
	if cur == nil {
		return
	}
	for _, ob := range ct.o.list {
		ob.EndAttempt(cur, end)
	}
}

// Retry records why the next attempt will be made: the last one's session
// expired (sessionExpired), or may have run (mayHaveRun), or neither (it
// was not sent); and what the call waits for first: a new session, if the
// last one was taken out of service (discard is not policy.NoLoss).
func (ct *Trace) Retry(sessionExpired, mayHaveRun bool, discard policy.Loss) {
	if ct == nil {
		return
	}
	reason := observe.AttemptNotSent
	switch {
	case sessionExpired:
		reason = observe.AttemptSessionExpired
	case mayHaveRun:
		reason = observe.AttemptOutcomeUnknown
	}
	wait := observe.WaitNone
	if discard != policy.NoLoss {
		wait = observe.WaitRedial
		if discard.Reinitializes() {
			wait = observe.WaitReinitialize
		}
	}
	ct.mu.Lock()
	ct.next = reason
	ct.lastType, ct.lastCode = "", 0
	if wait != observe.WaitNone {
		ct.wait, ct.waitStart = wait, time.Now()
	}
	ct.mu.Unlock()
}

// ReplayRefused records that the call was not sent again because it is not
// safe to repeat.
func (ct *Trace) ReplayRefused() {
	if ct == nil {
		return
	}
	ct.mu.Lock()
	ct.refused = true
	ct.mu.Unlock()
}

// ToolResult records, from inside a tools/call's send, whether the tool
// reported its own failure (IsError).
func (o *Set) ToolResult(ctx context.Context, res *mcp.CallToolResult) {
	if o == nil || res == nil || !res.IsError {
		return
	}
	if ct := traceOf(ctx); ct != nil {
		ct.mu.Lock()
		ct.toolError = true
		ct.mu.Unlock()
	}
}

// ResendHook is the token layer's hook (auth.Transport.Resend): a request
// refused with status (401, 403) is sent again with a new token. Within a
// call, that ends the attempt and starts another. nil without observers.
func (o *Set) ResendHook() func(ctx context.Context, status int) context.Context {
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
func (ct *Trace) SawResponse(major, minor int) {
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
func (ct *Trace) sentRequest(id string) {
	ct.mu.Lock()
	if ct.cur != nil {
		ct.requestID = id
	}
	ct.mu.Unlock()
}

// Error classes.

// callErrorType is the class of a call's error, as CallEnd documents it,
// and the JSON-RPC code when the class is one: the library's class of the
// error the call returns (class, the client's word for its own errors);
// when it returns the server's answer as is, the class the policy gave the
// attempt that met it (lastType, lastCode); and when no attempt did
// (opening a session met it), its JSON-RPC code.
func callErrorType(err error, class string, toolError bool, lastType string, lastCode int) (string, int) {
	switch {
	case err == nil && toolError:
		return "tool_error", 0
	case err == nil:
		return "", 0
	case class != "":
		return class, 0
	case lastType != "":
		return lastType, lastCode
	}
	if code, ok := policy.RPCCode(err); ok {
		return strconv.Itoa(code), code
	}
	return "_OTHER", 0
}
