package client

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/pool"
)

// failedFast is why a call stopped waiting for a session short of its
// deadline (policy.WhileNoSession): the caller's error says it, with the
// last attempt's error.
type failedFast struct {
	why  string
	last error
}

func (e *failedFast) Error() string { return e.why }

// whileNoSession is the pool's StopWaiting: asked by a call waiting for a
// session (ctx is the call's), each time the pool changes; nil to go on
// waiting.
func (c *ResilientClient) whileNoSession(ctx context.Context, w pool.Waiting) error {
	if err := c.crashLoopFailFast(); err != nil {
		return err
	}
	failFast := false
	if o := callOptionsOf(ctx); o != nil {
		failFast = o.failFast
	}
	b := c.brk.Load()
	switch policy.WhileNoSession(failFast, w.Failed, b.isOpen()) {
	case policy.FailFastNoSession:
		return &failedFast{why: "no session, and the last dial failed (FailFast)", last: w.Last}
	case policy.FailFastOutage:
		why := "failing fast: the server has been unreachable for longer than " + b.after.String()
		if since := b.outageSince(); !since.IsZero() {
			why = "failing fast: the server has been unreachable for " + time.Since(since).Round(time.Millisecond).String() +
				" (WithFailFastAfter " + b.after.String() + ")"
		}
		return &failedFast{why: why, last: w.Last}
	}
	return nil
}

// noteOutcome tells the circuit breaker what a failure says of the
// server: an outage, if it left no session in service; that the server is
// there, if it answered as only a live server does.
func (c *ResilientClient) noteOutcome(v policy.Verdict) {
	switch {
	case v.Outage():
		if !c.anyReady() {
			c.outage().failed(time.Now())
		}
	case v.Class == policy.ServerError, v.Class == policy.AuthRequired, v.Class == policy.Expired, v.Class == policy.Rejected, v.Busy:
		c.brk.Load().reached()
	}
}

// anyReady reports whether a session is in service.
func (c *ResilientClient) anyReady() bool {
	for i := range c.members {
		if fromPoolState(pool.State(c.members[i].pool.Load())) == Ready {
			return true
		}
	}
	return false
}

// dialVerdict is what a failed dial (opening a session or getting the
// kept one back) says of the server. A dial that ran out of its connect
// timeout met a server that does not answer, unless the client was
// closing.
func dialVerdict(err error, closing bool) policy.Verdict {
	if pe := new(probeError); errors.As(err, &pe) {
		return pe.verdict
	}
	if oe := new(openError); errors.As(err, &oe) {
		if oe.verdict.Class == policy.Caller && !closing {
			return policy.Verdict{Class: policy.OutcomeUnknown}
		}
		return oe.verdict
	}
	if errors.Is(err, context.DeadlineExceeded) && !closing {
		return policy.Verdict{Class: policy.OutcomeUnknown}
	}
	return policy.Classify(err, policy.Session{}, nil, false)
}

// openError is a failed handshake's error, with its classification.
type openError struct {
	verdict policy.Verdict
	err     error
}

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

// cancelNotificationTimeout bounds a notifications/cancelled, which is best
// effort, as mcp-go's own is.
const cancelNotificationTimeout = 5 * time.Second

// tellCancelled tells the server, in the session era, that the request the
// attempt ex recorded was abandoned (a call ended for want of progress, or
// at WithMaxCallDuration): mcp-go sends no notifications/cancelled over
// HTTP, and does not say what id a request had. In 2026-07-28 closing the
// request's stream, which the call's end does, is the cancellation. Sent in
// the background: the caller has its answer already.
func (c *ResilientClient) tellCancelled(s *session, ex *wire.Exchange, cause error) {
	id, ok := ex.RequestID()
	if !s.sessionEra || !ok {
		return
	}
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
		},
	}
	c.goBackground(func() {
		ctx, cancel := context.WithTimeout(c.lifetime, cancelNotificationTimeout)
		defer cancel()
		if err := s.mc.GetTransport().SendNotification(ctx, n); err != nil {
			c.log.Debug("notifications/cancelled not delivered", "err", describe(err))
		}
	})
}

// goBackground runs f on a goroutine Close waits for, unless the client is
// closed; it reports whether f runs.
func (c *ResilientClient) goBackground(f func()) bool {
	// Close sets closed, then takes tools.mu once, then waits for
	// background: an Add made under the lock before that is waited for.
	c.tools.mu.Lock()
	defer c.tools.mu.Unlock()
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
