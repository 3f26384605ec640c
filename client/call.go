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

	var pauses backoff.BackOff // made on the first retry that must wait
	ex := newExchange()
	ctx = ex.context(ctx)
	renegotiated := false
	// attempt counts sends that may be retried (outcome unknown, 429, 503);
	// replays after a re-initialization have their own count, so that a
	// call spanning two restarts is not failed for it, while a server that
	// answers 404 to everything still cannot hold a call in a loop.
	replays := 0
	for attempt := 1; ; {
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
		log := c.log.With("method", method, "attempt", attempt, "class", v.class, "err", err)

		var pause time.Duration
		switch v.class {
		case classCaller:
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("resilientmcp: %s: no answer before the deadline; the request may have run on the server: %w", method, err)
			}
			return err
		case classFatal:
			return err
		case classSessionExpired:
			// Every goroutine that used this lease's generation sees this;
			// the first Discard starts the one re-initialization, the others
			// are no-ops and wait for it in Acquire.
			if v.renegotiate {
				if renegotiated {
					return err
				}
				renegotiated = true
			}
			lease.Discard(&lostError{kind: lossExpired, err: err})
		case classNotSent:
			if v.unreachable {
				// Nothing reached the server. Hand the waiting to the
				// reconnect loop, which tries on the backoff schedule for
				// every caller at once; it does not count as an attempt.
				log.Debug("server unreachable; waiting for reconnect")
				lease.Discard(&lostError{kind: lossUnreachable, err: err})
				continue
			}
			if pauses == nil {
				pauses = c.opts.newBackOff()
			}
			pause = max(v.retryAfter, pauses.NextBackOff())
		case classOutcomeUnknown:
			// A connection that died under a request usually died with its
			// siblings (a server restart, a middlebox forgetting flows):
			// drop the idle ones rather than meet them one failure at a time.
			c.httpClient.CloseIdleConnections()
			if !safe {
				return fmt.Errorf("%w: %s: %w", ErrOutcomeUnknown, method, err)
			}
			// The first retry goes at once: the usual cause is a pooled
			// connection the server had closed, which the HTTP client has
			// now dropped. A second failure in a row waits.
			if pauses != nil {
				pause = pauses.NextBackOff()
			} else {
				pauses = c.opts.newBackOff()
			}
		}

		if v.class == classSessionExpired {
			// Not paid from the budget: the generation gate already makes
			// it one re-initialization for every caller.
			if replays++; replays > c.opts.maxAttempts {
				return fmt.Errorf("resilientmcp: %s: session lost %d times in a row: %w", method, replays, err)
			}
			c.stats.replays.Add(1)
		} else if v.staleConnection {
			// A pooled connection that died says nothing of the server;
			// a restart can fail several at once. Paid from the budget,
			// but not counted against the call's attempts.
			if !c.budget.TryWithdraw() {
				return fmt.Errorf("resilientmcp: %s: retry budget exhausted: %w", method, err)
			}
		} else {
			if attempt >= c.opts.maxAttempts {
				return fmt.Errorf("resilientmcp: %s: giving up after %d attempts: %w", method, attempt, err)
			}
			if !c.budget.TryWithdraw() {
				return fmt.Errorf("resilientmcp: %s: retry budget exhausted: %w", method, err)
			}
			attempt++
		}
		c.stats.retries.Add(1)
		log.Info("retrying", "pause", pause)
		if pause > 0 && pause != backoff.Stop {
			t := time.NewTimer(pause)
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
