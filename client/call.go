package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/resilientmcp/resilientmcp/health"
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
	ctx = c.obs.startCall(ctx, method, tool)
	if c.closed.Load() {
		return c.obs.endCall(ctx, ErrClosed)
	}
	c.stats.calls.Add(1)
	c.stats.inFlight.Add(1)
	defer c.stats.inFlight.Add(-1)
	c.budget.Deposit()
	err := c.run(ctx, method, tool, send)
	if err != nil {
		c.stats.record(err)
	}
	return c.obs.endCall(ctx, err)
}

// run is do without the call's accounting, for requests the client makes
// itself (listing tools to decide a replay).
func (c *ResilientClient) run(ctx context.Context, method, tool string, send func(context.Context, *session) error) error {
	ct := c.obs.callOf(ctx)
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	ex := newExchange()
	ctx = ex.context(ctx)
	r := retries{method: method, tool: tool, max: c.opts.maxAttempts, poolSize: c.opts.poolSize, newBackOff: c.opts.newBackOff}
	safe := func() bool { return tool == "" || c.toolSafe(ctx, tool) }
	for {
		lease, err := c.pool.Acquire(ctx)
		if err != nil {
			return c.acquireFailed(&r, err)
		}
		s := lease.Value()
		if err := c.validate(ctx, s, r.revalidate); err != nil {
			lease.Release()
			if err := c.probeFailed(ctx, &r, s, err, deadline); err != nil {
				return err
			}
			continue
		}
		r.revalidate = false
		ex.reset()
		err = send(ct.attempt(ctx, s), s)
		lease.Release()
		if err == nil {
			ct.attempted(nil, false)
			s.health().Touch()
			s.markServed()
			return nil
		}
		if ex.sessionAccepted() {
			// The server took the session's id before the failure: a 400
			// to it from now on means the server lost it.
			s.markServed()
		}
		r.ctxErr = ctx.Err()
		v := classify(err, s, ex, r.ctxErr != nil)
		if v.cause != nil {
			err = v.cause
		}
		ct.attempted(err, v.corrupt)
		if c.closed.Load() {
			// Close closed the session under the call.
			r.mayHaveRun = r.mayHaveRun || v.sent || v.mayHaveRun()
			return r.closed(err)
		}
		a := r.after(v, err, safe, deadline)
		if a.discard != nil {
			lease.Discard(a.discard)
		}
		if a.closeIdle {
			// A connection that died under a request usually died with its
			// siblings (a server restart, a middlebox forgetting flows):
			// drop the idle ones rather than meet them one failure at a time.
			c.httpClient.CloseIdleConnections()
		}
		if a.refused {
			ct.replayRefused()
			c.log.Warn("replay refused: the request may have run and is not safe to repeat", "method", method, "tool", tool, "err", describe(err))
		}
		if a.err != nil {
			return a.err
		}
		if a.reconnect {
			c.log.Debug("server unreachable; waiting for reconnect", "method", method, "err", describe(err))
			ct.retry(false, false, a.discard)
			continue
		}
		if a.budget && !c.budget.TryWithdraw() {
			return r.fail("retry budget exhausted", err)
		}
		if a.replay {
			c.stats.replays.Add(1)
		}
		c.stats.retries.Add(1)
		ct.retry(a.replay, v.mayHaveRun(), a.discard)
		c.log.Info("retrying", "method", method, "tool", tool, "attempt", r.sends+1, "class", v.class, "err", describe(err), "pause", a.pause)
		if a.pause > 0 && a.pause != backoff.Stop {
			switch wait.Sleep(ctx, a.pause, c.lifetime.Done()) {
			case wait.Stopped:
				return r.closed(err)
			case wait.Cancelled:
				return r.fail("the deadline passed while waiting to try again", err, ctx.Err())
			}
		}
	}
}

// probeFailed decides what a failed probe of the session a call was about
// to be sent on means for the call: the call was not sent, so the probe's
// failure is the session's, never the call's outcome (F29). The session is
// replaced and the call waits for another, within its deadline; a server
// that answered "busy" keeps its session and the call waits as asked (F30);
// only a refusal for want of authorization ends the call, which did not
// run. nil: try again.
func (c *ResilientClient) probeFailed(ctx context.Context, r *retries, s *session, err error, deadline time.Time) error {
	// A new session has just proved the server answers: it is not probed
	// again for the same doubt.
	r.revalidate = false
	var busy *health.BusyError
	var pe *probeError
	switch {
	case ctx.Err() != nil:
		return r.fail("no session answered before the deadline", err, ctx.Err())
	case c.closed.Load():
		return r.closed(nil)
	case errors.As(err, &busy):
		pause := max(busy.After, r.nextPause())
		if !deadline.IsZero() && time.Until(deadline) < pause {
			return r.fail(fmt.Sprintf("the server is busy and the deadline leaves no time for the %v pause", pause.Round(time.Millisecond)), err, context.DeadlineExceeded)
		}
		c.log.Info("server busy; waiting before sending", "method", r.method, "pause", pause)
		switch wait.Sleep(ctx, pause, c.lifetime.Done()) {
		case wait.Stopped:
			return r.closed(nil)
		case wait.Cancelled:
			return r.fail("the deadline passed while the server was busy", err, ctx.Err())
		}
		return nil
	case errors.As(err, &pe) && pe.verdict.class == classAuth:
		return authFailure(pe.err)
	}
	c.log.Info("the session failed its probe before a call; the call waits for another", "method", r.method, "err", describe(err))
	c.replace(s, err)
	return nil
}

// acquireFailed turns the reason no session could be had into the caller's
// error.
func (c *ResilientClient) acquireFailed(r *retries, err error) error {
	var wait *pool.WaitError
	switch {
	case errors.Is(err, pool.ErrClosed), c.closed.Load():
		return r.closed(nil)
	case errors.As(err, &wait):
		return r.fail("no session before the deadline", wait)
	}
	// Opening a session failed with an error no retry can fix: the
	// server's own answer to the handshake.
	switch {
	case classify(err, nil, nil, false).class == classAuth:
		return authFailure(err)
	case r.mayHaveRun:
		return r.fail("reconnecting failed", err)
	}
	return err
}

// closed is the error of a call Close interrupted.
func (r *retries) closed(cause error) error {
	if !r.mayHaveRun && cause == nil {
		return ErrClosed
	}
	e := &callError{closed: true, method: r.method, sends: r.sends, cause: cause}
	if r.mayHaveRun {
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
