package client

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/wait"
	"github.com/resilientmcp/resilientmcp/pool"
)

// do is the one path every call takes: get a session, send, classify a
// failure, and decide whether and where to send again.
//
// tool is the tool of a tools/call, "" for any other method: every other
// method is safe to repeat, and a tool's safety is asked only when an
// attempt's outcome is unknown.
func (c *ResilientClient) do(ctx context.Context, method, tool string, send func(context.Context, *session) error) error {
	ctx, err := c.begin(ctx, method, tool)
	if err != nil {
		return err
	}
	return c.end(ctx, c.account(ctx, method, tool, send))
}

// begin opens the books of one call, as the observers and Stats see it,
// however many attempts and forms (a plain tools/call, then its task) it
// takes, or whether the listing cache answers it: the observers' start,
// the count and the in-flight gauge. A call after Close is ended at once, with
// ErrClosed as its error. Every call begin opens is closed by end.
func (c *ResilientClient) begin(ctx context.Context, method, tool string) (context.Context, error) {
	ctx = c.obs.startCall(ctx, method, tool)
	if c.closed.Load() {
		return ctx, c.obs.endCall(ctx, ErrClosed)
	}
	c.stats.calls.Add(1)
	c.stats.inFlight.Add(1)
	return ctx, nil
}

// end closes the books begin opened, with the call's error (its class
// counted) and returns the error the observers may have replaced.
func (c *ResilientClient) end(ctx context.Context, err error) error {
	c.stats.inFlight.Add(-1)
	if err != nil {
		c.stats.record(err)
	}
	return c.obs.endCall(ctx, err)
}

// account is a call's attempts (run), paid into the retry budget: the
// budget grows with the calls that reach the pipeline, not with those the
// listing cache answers (listings.go). The books are the caller's (begin,
// end).
func (c *ResilientClient) account(ctx context.Context, method, tool string, send func(context.Context, *session) error) error {
	c.opts.retryBudget.Deposit()
	return c.run(ctx, method, tool, send)
}

// run is do without the call's accounting, for requests the client makes
// itself (listing tools to decide a replay). Each attempt goes down the
// pipeline: a session (acquire, which probes it before use), the request
// (send), and what its failure means (afterFailure).
func (c *ResilientClient) run(ctx context.Context, method, tool string, send func(context.Context, *session) error) error {
	p := attempts{ct: c.obs.callOf(ctx), tool: tool, repeat: policy.RepeatByNature}
	o := callOptionsOf(ctx)
	if o != nil {
		if o.invalid != nil {
			return o.invalid
		}
		p.repeat = o.repeat
	}
	if idle, onProgress, governed := c.governs(o); governed {
		gs := new(governedState)
		p.st, p.pc = &gs.callState, &gs.progress
		c.follow(ctx, p.pc, idle, onProgress)
		ctx = p.pc
		defer p.pc.end()
		p.st.ex.RewriteRequests(p.pc)
	} else {
		p.st = new(callState)
		var stop context.CancelFunc
		ctx, stop = c.callContext(ctx)
		defer stop()
	}
	p.deadline, _ = ctx.Deadline()
	p.st.ex.Init()
	ctx = p.st.ex.Bind(ctx)
	p.r = retries{method: method, Retries: policy.Retries{Max: c.opts.maxAttempts, PoolSize: c.opts.poolSize, NewBackOff: c.opts.newBackOff, RetryableRPC: c.opts.retryableRPC}}
	for {
		s, err := c.acquire(ctx, &p)
		if err != nil {
			return err
		}
		if s == nil {
			continue // it failed its probe: the call waits for another
		}
		if err = c.send(ctx, &p, s, send); err == nil {
			return nil
		}
		if err = c.afterFailure(ctx, &p, s, err); err != nil {
			return err
		}
	}
}

// attempts is what a call's attempts share on their way down run's
// pipeline.
type attempts struct {
	st       *callState
	pc       *progressCall // the call's progress, if it is governed by it; else nil
	ct       *callTrace    // the observers' view of the call; nil without observers
	r        retries
	deadline time.Time
	repeat   policy.Repeat // WithRepeat's, else policy.RepeatByNature
	tool     string        // "" but for a tools/call
	sent     time.Time     // when the last attempt was sent
}

// acquire leases a session for the next attempt, and probes it first if
// it has been idle or is in doubt (probeBeforeUse). nil and no error: it
// failed its probe, and the call waits for another (probeFailed).
func (c *ResilientClient) acquire(ctx context.Context, p *attempts) (*session, error) {
	r, lease := &p.r, &p.st.lease
	err := c.pool.AcquireInto(ctx, lease)
	if err != nil {
		r.CtxErr = ctx.Err()
		return nil, c.acquireFailed(r, err)
	}
	s := lease.Value()
	doubted := r.Doubts(s.opened)
	if err := c.probeBeforeUse(ctx, s, doubted); err != nil {
		lease.Release()
		return nil, c.probeFailed(ctx, r, s, err, p.deadline)
	}
	if doubted {
		r.Probed()
	}
	r.Revalidate = false
	return s, nil
}

// send makes one attempt on s, leased by acquire, and releases it. An
// answer is recorded for what it proves of s; a failure is returned as
// it came, for afterFailure.
func (c *ResilientClient) send(ctx context.Context, p *attempts, s *session, send func(context.Context, *session) error) error {
	ct, pc := p.ct, p.pc
	p.st.ex.Reset()
	if pc != nil {
		pc.sending()
	}
	p.sent = time.Now()
	err := send(ct.attempt(ctx, s), s)
	if pc != nil {
		pc.sent()
	}
	p.st.lease.Release()
	if err == nil {
		ct.answered()
		s.health().Touch()
		s.markServed()
		c.answered(s)
	}
	return err
}

// afterFailure classifies the failure of an attempt on s (policy.Classify)
// and carries out what the policy decides of it (policy.Retries.After):
// for the session, the breaker, the server and the call. It returns the
// call's error, or nil to try again, after any pause the policy asks for.
func (c *ResilientClient) afterFailure(ctx context.Context, p *attempts, s *session, err error) error {
	ex, lease, r, ct, pc := &p.st.ex, &p.st.lease, &p.r, p.ct, p.pc
	method, tool := r.method, p.tool
	if ex.SessionAccepted() {
		// The server took the session's id before the failure: a 400
		// to it from now on means the server lost it.
		s.markServed()
	}
	r.CtxErr = ctx.Err()
	v := policy.Classify(err, s.policy(), ex, r.CtxErr != nil)
	if v.Cause != nil {
		err = v.Cause
	}
	ct.attempted(err, v, r.CtxErr)
	if c.closed.Load() {
		// Close closed the session under the call.
		r.AfterClose(v)
		return r.closed(err)
	}
	if policy.Reidentify(v, s.policy()) {
		// The replay decision does not rest on annotations from before
		// the loss: the tools are listed again (once, for every call
		// that needs them).
		c.doubtTools(p.sent)
	}
	safe := func() bool {
		return policy.SafeToRepeat(p.repeat, func() bool { return tool == "" || c.toolSafe(ctx, tool) })
	}
	a := r.After(v, safe, p.deadline)
	if a.Discard != policy.NoLoss {
		lease.Discard(&lostError{kind: a.Discard, err: err})
	}
	c.noteOutcome(v)
	if pc != nil && pc.idle > 0 && r.CtxErr != nil && v.Sent {
		// A call governed by progress ended by its idle timeout or its
		// absolute bound: the server is told to stop.
		c.tellCancelled(s, ex, context.Cause(ctx))
	}
	if np := pc.noProgress(); np != nil && a.End == policy.GiveUp {
		a.Why = np.Error()
		a.Also = append(a.Also, np)
		err = nil // the cause is the client's own cancellation
	}
	if a.CloseIdle {
		// A connection that died under a request usually died with its
		// siblings (a server restart, a middlebox forgetting flows):
		// drop the idle ones rather than meet them one failure at a time.
		c.closeIdleConnections()
	}
	if a.Refused {
		ct.replayRefused()
		c.log.Warn("replay refused: the request may have run and is not safe to repeat", "method", method, "tool", tool, "err", describe(err))
	}
	if a.End != policy.Continue {
		return r.end(a, err)
	}
	if a.Reconnect {
		c.log.Debug("server unreachable; waiting for reconnect", "method", method, "err", describe(err))
		ct.retry(false, false, a.Discard)
		return nil
	}
	if a.Budget && !c.opts.retryBudget.TryWithdraw() {
		return r.fail("retry budget exhausted", err)
	}
	if a.Expired {
		c.stats.replays.Add(1)
	}
	c.stats.retries.Add(1)
	ct.retry(a.Expired, v.MayHaveRun(), a.Discard)
	c.log.Info("retrying", "method", method, "tool", tool, "attempt", r.Sends+1, "class", v.Class, "err", describe(err), "pause", a.Pause)
	if a.Pause > 0 && a.Pause != backoff.Stop {
		switch wait.Sleep(ctx, a.Pause, c.lifetime.Done()) {
		case wait.Stopped:
			return r.closed(err)
		case wait.Cancelled:
			return r.fail("the deadline passed while waiting to try again", err, ctx.Err())
		}
	}
	return nil
}

// callState is what a call holds through its attempts, made in one
// allocation: the exchange its requests go out under (Bind), and its lease
// of a session, taken again for each attempt.
type callState struct {
	ex    wire.Exchange
	lease pool.Lease[*session]
}

// governedState is the callState of a call followed by its progress, with
// its progressCall: one allocation for both.
type governedState struct {
	callState
	progress progressCall
}

// probeFailed carries out what a failed probe of the session a call was
// about to be sent on means for the call (policy.AfterProbe: never the
// call's outcome, F29). nil: try again.
func (c *ResilientClient) probeFailed(ctx context.Context, r *retries, s *session, err error, deadline time.Time) error {
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
	a := r.AfterProbe(v, deadline)
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
	c.log.Info("the session failed its probe before a call; the call waits for another", "method", r.method, "err", describe(err))
	c.replace(s, err)
	return nil
}

// acquireFailed turns the reason no session could be had into the caller's
// error.
func (c *ResilientClient) acquireFailed(r *retries, err error) error {
	var wait *pool.WaitError
	var ff *failedFast
	switch {
	case errors.Is(err, pool.ErrClosed), c.closed.Load():
		return r.closed(nil)
	case errors.As(err, &wait):
		return r.fail("no session before the deadline", wait)
	case errors.As(err, &ff):
		c.stats.failedFast.Add(1)
		return r.fail(ff.why, ff.last)
	case isNoAffinity(err):
		// Typed whatever the call did before: ErrUnavailable, or
		// ErrOutcomeUnknown if an attempt may have run (F39).
		na := new(noAffinityError)
		errors.As(err, &na)
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

// callContext bounds a call by WithCallTimeout if ctx has no deadline.
//
// Close needs no context of its own here: closing a session's mcp-go client
// cancels every request in flight on it, and Close closes them all. That
// saves each call a second context and a registration with the client's.
func (c *ResilientClient) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	if ctx == context.Background() || ctx == context.TODO() {
		// Nothing to inherit: share a deadline with the calls around.
		return c.deadlines.get(), func() {}
	}
	return context.WithTimeout(ctx, c.opts.callTimeout)
}
