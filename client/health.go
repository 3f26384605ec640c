package client

import (
	"context"
	"errors"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/health"
)

// probeError carries a failed probe's classification to whoever acts on it.
type probeError struct {
	verdict policy.Verdict
	err     error
}

func (e *probeError) Error() string { return "probe: " + wire.Describe(e.err) }
func (e *probeError) Unwrap() error { return e.err }

// checkSession probes s, once more on a fresh connection when the policy
// says the failure may be only the pooled connection's (policy.RetryProbe).
func (ss *sessions) checkSession(ctx context.Context, s *session) error {
	v, err := ss.probe(ctx, s)
	if err != nil && policy.RetryProbe(v) && ctx.Err() == nil {
		ss.c.closeIdleConnections()
		v, err = ss.probe(ctx, s)
	}
	if err == nil {
		s.markServed()
		return nil
	}
	switch policy.Probe(v, ss.c.opts.retryableRPC) {
	case policy.Alive:
		s.markServed()
		return nil
	case policy.Busy:
		return &health.BusyError{After: v.RetryAfter, Err: &probeError{verdict: v, err: err}}
	}
	return &probeError{verdict: v, err: err}
}

// watch starts the health monitor of a session going into service, or
// going back into service after the server was unreachable: a monitor that
// gave up on it then is replaced, since being unreachable says nothing bad
// of the session.
func (ss *sessions) watch(s *session) {
	interval := ss.c.opts.keepAlive
	if ss.c.opts.frozenProber {
		interval = 0
	}
	old := s.monitor.Swap(health.Start(health.Config{
		Interval:  interval,
		Timeout:   ss.c.opts.probeTimeout(),
		Threshold: ss.c.opts.failureThreshold,
		Probe: func(ctx context.Context) error {
			err := ss.checkSession(ctx, s)
			ss.dropIdleConnections()
			return err
		},
		OnProbe: func(err error, failures int) {
			ss.c.stats.Probes.Add(1)
			ss.c.obs.Probed(s, err)
			if busy := new(health.BusyError); errors.As(err, &busy) {
				ss.c.log.Info("probe: the server is busy; session kept", "retry_after", busy.After)
				return
			}
			if err != nil {
				ss.c.stats.ProbeFailures.Add(1)
				ss.c.log.Warn("probe failed", "failures", failures, "err", err)
			}
			ss.setDegraded(s, failures > 0)
		},
		OnUnhealthy: func(err error) { ss.replace(s, err) },
	}))
	if old != nil {
		old.Stop()
	}
}

// dropIdleConnections renews the Transport of the client's own HTTP client
// after a probe, when no call is in flight: an idle client then holds no
// socket, no goroutine and none of the Transport's bookkeeping
// (WithKeepIdleConnection). A probe made for a call about to be sent finds
// the call in flight and leaves the connection to it; so does the probe of
// an idle session of a pool whose other sessions are busy.
func (ss *sessions) dropIdleConnections() {
	if ss.c.ownTransport != nil && !ss.c.opts.keepIdleConn && ss.c.stats.InFlight.Load() == 0 {
		ss.c.ownTransport.Renew()
	}
}

// replace takes s out of service, if it still is, because of a failed probe.
func (ss *sessions) replace(s *session, err error) {
	lost := &lostError{kind: policy.LossUnhealthy, err: err}
	// A probe that did not fail with a verdict timed out in the monitor: a
	// session that does not answer.
	v := policy.Verdict{Class: policy.OutcomeUnknown}
	if pe := new(probeError); errors.As(err, &pe) {
		lost.kind = policy.ProbeLoss(pe.verdict)
		v = pe.verdict
	}
	if ss.pool.DiscardValue(s, lost) {
		ss.c.log.Info("replacing session", "member", s.member, "cause", err)
	}
	ss.noteOutcome(v)
}

// setDegraded records whether a session is failing probes.
func (ss *sessions) setDegraded(s *session, failing bool) {
	// A monitor's first probe can end before watch has stored it (a short
	// keepalive): nil is a monitor that has not given up.
	if m := s.health(); m == nil || !m.Unhealthy() {
		ss.members[s.member].degraded.Store(failing)
		ss.refreshState()
	}
}
