package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/resilientmcp/resilientmcp/pool"
)

// do is the one path every call takes: get a session, send, classify a
// failure, and decide whether and where to send again.
//
// safe says whether the request may be sent again when an earlier attempt
// may have run on the server.
func (c *ResilientClient) do(ctx context.Context, method string, safe bool, send func(context.Context, *session) error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.stats.calls.Add(1)
	c.stats.inFlight.Add(1)
	defer c.stats.inFlight.Add(-1)
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	c.budget.Deposit()

	ex := newExchange()
	ctx = ex.context(ctx)
	r := retries{max: c.opts.maxAttempts, newBackOff: c.opts.newBackOff}
	for {
		lease, err := c.pool.Acquire(ctx)
		if err != nil {
			return c.unavailable(method, err)
		}
		s := lease.Value()
		if err := c.validate(ctx, s); err != nil {
			lease.Release()
			// Nothing was sent: replace the session and take another.
			var pe *probeError
			switch {
			case ctx.Err() != nil:
				return c.unavailable(method, &pool.WaitError{Ctx: ctx.Err(), Last: err})
			case errors.As(err, &pe) && pe.verdict.class == classFatal:
				return pe.err
			}
			c.replace(s, err)
			continue
		}
		ex.reset()
		err = send(ctx, s)
		lease.Release()
		if err == nil {
			s.health.Touch()
			return nil
		}
		if c.closed.Load() {
			// Close closed the session under the call.
			return fmt.Errorf("%w: %w", ErrClosed, err)
		}
		v := classify(err, s.sessionEra, ex, ctx.Err() != nil)
		a := r.after(method, v, err, safe)
		if a.discard != nil {
			lease.Discard(a.discard)
		}
		if a.closeIdle {
			// A connection that died under a request usually died with its
			// siblings (a server restart, a middlebox forgetting flows):
			// drop the idle ones rather than meet them one failure at a time.
			c.httpClient.CloseIdleConnections()
		}
		if a.err != nil {
			return a.err
		}
		if a.reconnect {
			c.log.Debug("server unreachable; waiting for reconnect", "method", method, "err", err)
			continue
		}
		if a.budget && !c.budget.TryWithdraw() {
			return fmt.Errorf("resilientmcp: %s: retry budget exhausted: %w", method, err)
		}
		if a.replay {
			c.stats.replays.Add(1)
		}
		c.stats.retries.Add(1)
		c.log.Info("retrying", "method", method, "attempt", r.attempt, "class", v.class, "err", err, "pause", a.pause)
		if a.pause > 0 && a.pause != backoff.Stop {
			t := time.NewTimer(a.pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return c.unavailable(method, &pool.WaitError{Ctx: ctx.Err(), Last: err})
			case <-c.lifetime.Done():
				t.Stop()
				return ErrClosed
			}
		}
	}
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

// unavailable turns the reason no session could be had into the caller's
// error.
func (c *ResilientClient) unavailable(method string, err error) error {
	var wait *pool.WaitError
	switch {
	case errors.Is(err, pool.ErrClosed), c.closed.Load():
		return ErrClosed
	case errors.As(err, &wait):
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, method, wait)
	}
	return err // the connect attempt failed with an error retrying cannot fix
}
