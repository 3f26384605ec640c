package client

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/affinity"
	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/wait"
	"github.com/resilientmcp/resilientmcp/pool"
)

// call is the books of one call, as the observers and Stats see it,
// however many attempts and forms (a plain tools/call, then its task) it
// takes, or whether the listing cache answers it: the observers' start,
// the count and the in-flight gauge, the deposit into the retry budget,
// body, and the end, its error's class counted. Every method a caller
// calls goes through it once: do, CallTool, the task calls and the cached
// listings. A call after Close ends at once, with ErrClosed.
//
// A nil body is a call the listing cache answers: it is not deposited
// into the retry budget, which grows with the calls that reach the
// pipeline (callRun), not with those the cache answers (listings.Get).
// body's context is the one the observers gave the call: its result is
// told them there (toolResult).
func (c *ResilientClient) call(ctx context.Context, method, tool string, body func(context.Context) error) error {
	ctx = c.obs.StartCall(ctx, method, tool)
	if c.closed.Load() {
		c.obs.EndCall(ctx, ErrClosed)
		return ErrClosed
	}
	c.stats.Calls.Add(1)
	c.stats.InFlight.Add(1)
	var err error
	if body == nil {
		c.stats.CacheHits.Add(1)
		c.obs.FromCache(ctx, false)
	} else {
		c.opts.retryBudget.Deposit()
		err = body(ctx)
	}
	c.stats.InFlight.Add(-1)
	if err != nil {
		c.stats.Record(errorClass(err))
	}
	c.obs.EndCall(ctx, err)
	return err
}

// do is a call of one request: its books (call) and its attempts (run).
//
// tool is the tool of a tools/call, "" for any other method: every other
// method is safe to repeat, and a tool's safety is asked only when an
// attempt's outcome is unknown.
func (c *ResilientClient) do(ctx context.Context, method, tool string, send sendFunc) error {
	return c.call(ctx, method, tool, func(ctx context.Context) error {
		return c.run(ctx, method, tool, send)
	})
}

// sendFunc makes one attempt of a request on a session.
type sendFunc func(context.Context, *session) error

// run sends one request through the pipeline (callRun) without a call's
// books: a call's own (do), or one the client makes itself (listing tools
// to decide a replay).
func (c *ResilientClient) run(ctx context.Context, method, tool string, send sendFunc) error {
	var r callRun // on the stack: only its callState is on the heap
	ctx, err := c.startRun(&r, ctx, method, tool)
	if err != nil {
		return err
	}
	defer r.finish()
	return r.run(ctx, send)
}

// callRun is one request's way through the pipeline: its attempts, its
// deadline and its progress, and the steps each attempt takes, in order:
//
//	acquire       the breaker first, then a session from the pool, probed
//	              before use if it has been idle or is in doubt (health.go)
//	send          one attempt on it (send, the caller's sendFunc)
//	afterFailure  what its failure means (policy.Classify), and what
//	              follows (policy.Retries.After): the call's error, or
//	              another attempt
//
// It lives on its caller's stack; what the requests' context must reach
// (the exchange, the lease of a session, and for a call followed by its
// progress, the progressCall) is its callState, one allocation.
type callRun struct {
	c        *ResilientClient
	st       *callState
	tries    retries
	tool     string           // "" but for a tools/call
	repeat   policy.Repeat    // WithRepeat's, else policy.RepeatByNature
	ct       *observers.Trace // the observers' view of the call; nil without observers
	deadline time.Time
	sent     time.Time // when the last attempt was sent
	// progress is what the requests report to, nil if nothing follows
	// them: the call's own progressCall (ownProgress: it governs the call,
	// which bound set up), or the task call's it is a request of (follow).
	progress    *progressCall
	ownProgress bool
	stop        context.CancelFunc // ends the context bound made, if not the progressCall's
}

// callState is what a call's requests reach through their context, made
// in one allocation: the exchange they go out under (wire.Exchange, which
// is that context), and the lease of a session, taken again for each
// attempt.
type callState struct {
	ex    wire.Exchange
	lease pool.Lease[*session]
}

// governedState is the callState of a call followed by its progress, with
// its progressCall: one allocation for both.
type governedState struct {
	callState
	own progressCall
}

// startRun readies r, a zero callRun, for a request with ctx, and returns
// the context its attempts go out under: bound by its deadline and
// progress (bound), and bound to its exchange. A call made with an invalid
// option fails with it.
func (c *ResilientClient) startRun(r *callRun, ctx context.Context, method, tool string) (context.Context, error) {
	o := callOptionsOf(ctx)
	repeat := policy.RepeatByNature
	if o != nil {
		if o.invalid != nil {
			return ctx, o.invalid
		}
		repeat = o.repeat
	}
	idle, onProgress, followed := governs(c.opts.progressTimeout, o)
	if followed {
		g := new(governedState)
		r.st, r.progress, r.ownProgress = &g.callState, &g.own, true
		ctx, _ = c.bound(ctx, r.progress, idle, onProgress, false)
		r.st.ex.RewriteRequests(r.progress)
	} else {
		r.st = new(callState)
		ctx, r.stop = c.bound(ctx, nil, 0, nil, false)
	}
	r.c, r.tool, r.repeat, r.ct = c, tool, repeat, c.obs.CallOf(ctx)
	r.deadline, _ = ctx.Deadline()
	r.tries = retries{method: method, Retries: policy.Retries{Max: c.opts.maxAttempts, PoolSize: c.opts.poolSize, NewBackOff: c.opts.newBackOff, RetryableRPC: c.opts.retryableRPC}}
	r.st.ex.Init()
	return r.st.ex.Bind(ctx), nil
}

// follow makes r a request of the task call followed by p: its attempts
// are p's (the idle clock runs while they are out), and, for the request
// that creates the task (token), its requests carry p's progressToken.
func (r *callRun) follow(p *progressCall, token bool) {
	r.progress = p
	if token && p != nil {
		r.st.ex.RewriteRequests(p)
	}
}

// finish ends the contexts of the run, and its own progress.
func (r *callRun) finish() {
	if r.ownProgress {
		r.progress.End()
	} else if r.stop != nil {
		r.stop()
	}
}

// run makes the request's attempts, each down the pipeline, until one is
// answered or the call's error is decided.
func (r *callRun) run(ctx context.Context, send sendFunc) error {
	for {
		s, err := r.acquire(ctx)
		if err != nil {
			return err
		}
		if s == nil {
			continue // it failed its probe: the call waits for another
		}
		if err = r.send(ctx, s, send); err == nil {
			return nil
		}
		if err = r.afterFailure(ctx, s, err); err != nil {
			return err
		}
	}
}

// acquire leases a session for the next attempt. The breaker first: once
// it is open (WithFailFastAfter), the call fails here without waiting for
// the pool, which asks it again, through whileNoSession, while a call
// waits. The session is probed first if it has been idle or is in doubt
// (probeBeforeUse). nil and no error: it failed its probe, and the call
// waits for another (probeFailed).
func (r *callRun) acquire(ctx context.Context) (*session, error) {
	c, tries := r.c, &r.tries
	if c.sess.brk.Load().Open() {
		if err := c.sess.whileNoSession(ctx, pool.Waiting{}); err != nil {
			tries.CtxErr = ctx.Err()
			return nil, r.acquireFailed(err)
		}
	}
	if err := c.sess.pool.AcquireInto(ctx, &r.st.lease); err != nil {
		tries.CtxErr = ctx.Err()
		return nil, r.acquireFailed(err)
	}
	s := r.st.lease.Value()
	doubted := tries.Doubts(s.opened)
	if err := r.probeBeforeUse(ctx, s, doubted); err != nil {
		r.st.lease.Release()
		return nil, r.probeFailed(ctx, s, err)
	}
	if doubted {
		tries.Probed()
	}
	tries.Revalidate = false
	return s, nil
}

// probeBeforeUse probes s before the attempt is sent on it if s has not
// been heard from within the keepalive interval: the process may have been
// frozen, or the keepalive prober (health.go) could not run, while a
// middlebox dropped the connection or the session expired. force probes it
// regardless: the call's last attempt broke in a way that leaves the
// server's health in doubt. Probes are shared by every caller that asks
// while one is under way.
func (r *callRun) probeBeforeUse(ctx context.Context, s *session, force bool) error {
	if !force && s.health().IdleFor() < r.c.opts.idleBeforeProbe() {
		return nil
	}
	return s.health().Check(ctx)
}

// idleBeforeProbe is how long a session may go unheard from before a call
// probes it first. It is the keepalive interval; with keepalive off, the
// default interval, so that an idle session is still checked before use
// while steady traffic never pays a round trip for it.
func (o *options) idleBeforeProbe() time.Duration {
	if o.keepAlive > 0 {
		return o.keepAlive
	}
	return defaultKeepAlive
}

// send makes one attempt on s, leased by acquire, and releases it. An
// answer is recorded for what it proves of s; a failure is returned as
// it came, for afterFailure.
func (r *callRun) send(ctx context.Context, s *session, send sendFunc) error {
	ct, p := r.ct, r.progress
	r.st.ex.Reset()
	if p != nil {
		p.Sending()
	}
	r.sent = time.Now()
	err := send(ct.Attempt(ctx, s), s)
	if p != nil {
		p.Sent()
	}
	r.st.lease.Release()
	if err == nil {
		ct.Answered()
		s.health().Touch()
		s.markServed()
		r.c.sess.answered(s)
	}
	return err
}

// afterFailure classifies the failure of an attempt on s (policy.Classify)
// and carries out what the policy decides of it (policy.Retries.After):
// for the session, the breaker, the server and the call. It returns the
// call's error, or nil to try again, after any pause the policy asks for.
func (r *callRun) afterFailure(ctx context.Context, s *session, err error) error {
	c, ex, tries, ct := r.c, &r.st.ex, &r.tries, r.ct
	method, tool := tries.method, r.tool
	if ex.SessionAccepted() {
		// The server took the session's id before the failure: a 400
		// to it from now on means the server lost it.
		s.markServed()
	}
	tries.CtxErr = ctx.Err()
	v := policy.Classify(err, s.policy(), ex, tries.CtxErr != nil)
	if v.Cause != nil {
		err = v.Cause
	}
	ct.Attempted(err, v, tries.CtxErr)
	if c.closed.Load() {
		// Close closed the session under the call.
		tries.AfterClose(v)
		return tries.closed(err)
	}
	if policy.Reidentify(v, s.policy()) {
		// The replay decision does not rest on annotations from before
		// the loss: the tools are listed again (once, for every call
		// that needs them).
		c.listings.DoubtTools(r.sent)
	}
	safe := func() bool {
		return policy.SafeToRepeat(r.repeat, func() bool { return tool == "" || c.listings.ToolSafe(ctx, tool) })
	}
	a := tries.After(v, safe, r.deadline)
	if a.Discard != policy.NoLoss {
		r.st.lease.Discard(&lostError{kind: a.Discard, err: err})
	}
	c.sess.noteOutcome(v)
	if r.ownProgress {
		if r.progress.Idle() > 0 && tries.CtxErr != nil && v.Sent {
			// A call governed by progress ended by its idle timeout or
			// its absolute bound: the server is told to stop.
			c.messages.TellCancelled(s, ex, context.Cause(ctx))
		}
		if np := r.progress.NoProgress(); np != nil && a.End == policy.GiveUp {
			a.Why = np.Error()
			a.Also = append(a.Also, np)
			err = nil // the cause is the client's own cancellation
		}
	}
	if a.CloseIdle {
		// A connection that died under a request usually died with its
		// siblings (a server restart, a middlebox forgetting flows):
		// drop the idle ones rather than meet them one failure at a time.
		c.closeIdleConnections()
	}
	if a.Refused {
		ct.ReplayRefused()
		c.log.Warn("replay refused: the request may have run and is not safe to repeat", "method", method, "tool", tool, "err", wire.Describe(err))
	}
	if a.End != policy.Continue {
		return tries.end(a, err)
	}
	if a.Reconnect {
		c.log.Debug("server unreachable; waiting for reconnect", "method", method, "err", wire.Describe(err))
		ct.Retry(false, false, a.Discard)
		return nil
	}
	if a.Budget && !c.opts.retryBudget.TryWithdraw() {
		return tries.fail("retry budget exhausted", err)
	}
	if a.Expired {
		c.stats.Replays.Add(1)
	}
	c.stats.Retries.Add(1)
	ct.Retry(a.Expired, v.MayHaveRun(), a.Discard)
	c.log.Info("retrying", "method", method, "tool", tool, "attempt", tries.Sends+1, "class", v.Class, "err", wire.Describe(err), "pause", a.Pause)
	if a.Pause > 0 && a.Pause != backoff.Stop {
		switch wait.Sleep(ctx, a.Pause, c.lifetime.Done()) {
		case wait.Stopped:
			return tries.closed(err)
		case wait.Cancelled:
			return tries.fail("the deadline passed while waiting to try again", err, ctx.Err())
		}
	}
	return nil
}

// probeFailed carries out what a failed probe of the session a call was
// about to be sent on means for the call (policy.AfterProbe: never the
// call's outcome, F29). nil: try again.
func (run *callRun) probeFailed(ctx context.Context, s *session, err error) error {
	c, r := run.c, &run.tries
	switch {
	case ctx.Err() != nil:
		r.Revalidate, r.CtxErr = false, ctx.Err()
		return r.fail("no session answered before the deadline", err, ctx.Err())
	case c.closed.Load():
		return r.closed(nil)
	}
	// A probe that did not fail with a verdict (it timed out in the
	// monitor) failed as a session does.
	var v policy.Verdict
	pe := new(probeError)
	if errors.As(err, &pe) {
		v = pe.verdict
	}
	a := r.AfterProbe(v, run.deadline)
	switch {
	case a.End == policy.Unauthorized:
		return r.end(a, pe.err)
	case a.End != policy.Continue:
		return r.end(a, err, context.DeadlineExceeded)
	case a.Pause > 0:
		c.log.Info("server busy; waiting before sending", "method", r.method, "pause", a.Pause)
		switch wait.Sleep(ctx, a.Pause, c.lifetime.Done()) {
		case wait.Stopped:
			return r.closed(nil)
		case wait.Cancelled:
			return r.fail("the deadline passed while the server was busy", err, ctx.Err())
		}
		return nil
	}
	c.log.Info("the session failed its probe before a call; the call waits for another", "method", r.method, "err", wire.Describe(err))
	c.sess.replace(s, err)
	return nil
}

// acquireFailed turns the reason no session could be had into the caller's
// error.
func (run *callRun) acquireFailed(err error) error {
	c, r := run.c, &run.tries
	var wait *pool.WaitError
	var ff *failedFast
	var na *affinity.Error
	switch {
	case errors.Is(err, pool.ErrClosed), c.closed.Load():
		return r.closed(nil)
	case errors.As(err, &wait):
		return r.fail("no session before the deadline", wait)
	case errors.As(err, &ff):
		c.stats.FailedFast.Add(1)
		return r.fail(ff.why, ff.last)
	case errors.As(err, &na):
		// Typed whatever the call did before: ErrUnavailable, or
		// ErrOutcomeUnknown if an attempt may have run (F39).
		return r.fail("", na)
	}
	// Opening a session failed with an error no retry can fix: the
	// server's own answer to the handshake.
	switch {
	case policy.Classify(err, policy.Session{}, nil, false).Class == policy.AuthRequired:
		return authFailure(err)
	case r.MayHaveRun:
		return r.fail("reconnecting failed", err)
	}
	return err
}

// retries is a call's policy.Retries, with what its errors name.
type retries struct {
	policy.Retries
	method string
}

// end is the error of a call the policy ended with a.
func (r *retries) end(a policy.Action, err error, also ...error) error {
	switch a.End {
	case policy.AsIs:
		return err
	case policy.Unauthorized:
		return authFailure(err)
	}
	return r.fail(a.Why, err, append(a.Also, also...)...)
}

// fail is the call's error: ErrOutcomeUnknown if some attempt may have run,
// else ErrUnavailable.
func (r *retries) fail(why string, cause error, also ...error) error {
	kind := ErrUnavailable
	if r.MayHaveRun {
		kind = ErrOutcomeUnknown
	}
	return &callError{kind: kind, answered: r.Answered, method: r.method, why: why, sends: r.Sends, also: also, cause: notTheCallers(r.CtxErr, cause)}
}

// notTheCallers keeps a context's error out of a call's error chain when
// the caller's context did not end: the client's own contexts end too (a
// session closed under a stream's resumption, a probe's timeout), and a
// caller that checks errors.Is(err, context.Canceled) must not be told it
// cancelled. The message stays.
func notTheCallers(ctxErr, cause error) error {
	if ctxErr != nil || cause == nil ||
		!errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return errors.New(cause.Error())
}

// closed is the error of a call Close interrupted.
func (r *retries) closed(cause error) error {
	if !r.MayHaveRun && cause == nil {
		return ErrClosed
	}
	e := &callError{closed: true, method: r.method, sends: r.Sends, cause: notTheCallers(r.CtxErr, cause)}
	if r.MayHaveRun {
		e.kind = ErrOutcomeUnknown
	}
	return e
}

// governs reports how a call with options o, of a client whose
// ProgressTimeout is idle, is followed by its progress: the idle timeout
// that governs it (0: none) and the OnProgress to tell; ok is false when
// it is neither governed nor followed: bound's first half, for a call and
// a task call alike; bound sets up what it decides. The client's side of
// progress (the registry, notifications/cancelled) is
// client/internal/notify's.
func governs(idle time.Duration, o *callOptions) (_ time.Duration, onProgress func(mcp.ProgressNotification), ok bool) {
	if o != nil {
		if o.ofTask {
			// The task call governs its requests as a whole.
			return 0, nil, false
		}
		if o.progressTimeout > 0 {
			idle = o.progressTimeout
		}
		onProgress = o.onProgress
	}
	return idle, onProgress, idle > 0 || onProgress != nil
}

// bound sets up a call's deadline and its progress, for a call (long
// false) and a task call (long true) alike. p, a zero progressCall, is the
// call's progress if it is followed by it (idle > 0, or onProgress; see
// governs): p is then the call's context, ended with p.end, and no
// CancelFunc is returned. Else the call is bounded by callContext.
func (c *ResilientClient) bound(ctx context.Context, p *progressCall, idle time.Duration, onProgress func(mcp.ProgressNotification), long bool) (context.Context, context.CancelFunc) {
	if p == nil {
		return c.callContext(ctx, long)
	}
	var stop context.CancelFunc
	if idle == 0 {
		// Followed for OnProgress only: bounded as any call.
		ctx, stop = c.callContext(ctx, long)
	}
	p.Follow(ctx, stop, c.messages.Progress(), idle, onProgress, c.opts.maxCallDuration)
	return p, nil
}

// callContext bounds a call whose ctx has no deadline: by WithCallTimeout,
// or WithMaxCallDuration for a task call (long), which is long by choice
// (WithCallTimeout bounds each of its requests).
//
// Close needs no context of its own here: closing a session's mcp-go client
// cancels every request in flight on it, and Close closes them all. That
// saves each call a second context and a registration with the client's.
func (c *ResilientClient) callContext(ctx context.Context, long bool) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	if long {
		return context.WithTimeout(ctx, c.opts.maxCallDuration)
	}
	if ctx == context.Background() || ctx == context.TODO() {
		// Nothing to inherit: share a deadline with the calls around.
		return c.deadlines.Get(), func() {}
	}
	return context.WithTimeout(ctx, c.opts.callTimeout)
}
