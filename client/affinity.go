package client

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// affinity is what a pool member's sessions have shown of the
// deployment's affinity (policy.NoAffinity decides on it): the sessions
// lost young in a row, and how long the member holds off opening another
// after the verdict.
type affinity struct {
	young     atomic.Int32
	heldUntil atomic.Int64 // UnixNano; 0: no verdict
	verdict   atomic.Pointer[noAffinityError]
}

// noAffinityError is the dial error of a member that stopped opening
// sessions for want of affinity. It matches ErrNoAffinity.
type noAffinityError struct {
	young int32 // sessions lost young in a row
	last  error // what the last one met
	// report: the first verdict since a session last proved affinity;
	// the others are not logged or told to the observers again.
	report bool
}

func (e *noAffinityError) Error() string {
	return fmt.Sprintf("no session affinity: %d sessions in a row expired within their first requests: the load balancer sends a session's requests to replicas that do not know it; sticky sessions (by the Mcp-Session-Id header or by cookie) are needed; the last: %s", e.young, describe(e.last))
}

func (e *noAffinityError) Is(target error) bool { return target == ErrNoAffinity }
func (e *noAffinityError) Unwrap() error        { return e.last }

// affinityHeld is the error a dial of member fails with at once while a
// verdict of no affinity holds, nil otherwise.
func (ss *sessions) affinityHeld(member int) error {
	a := &ss.members[member].affinity
	if until := a.heldUntil.Load(); until == 0 || time.Now().UnixNano() >= until {
		return nil
	}
	if v := a.verdict.Load(); v != nil {
		held := *v
		held.report = false
		return &held
	}
	return nil
}

// noteLossForAffinity counts a session of member lost (young, for cause)
// towards a verdict of no affinity, and returns the verdict's error if
// there is one now.
func (ss *sessions) noteLossForAffinity(member int, young bool, cause error) error {
	a := &ss.members[member].affinity
	if !young {
		return nil
	}
	n := a.young.Add(1)
	if !policy.NoAffinity(n) {
		return nil
	}
	v := &noAffinityError{young: n, last: cause, report: ss.affinityReported.CompareAndSwap(false, true)}
	a.verdict.Store(v)
	a.heldUntil.Store(time.Now().Add(policy.NoAffinityHold).UnixNano())
	if v.report {
		ss.c.log.Error("the deployment needs session affinity: sessions expire within their first requests; calls fail with ErrNoAffinity, and a session is tried again every "+policy.NoAffinityHold.String(),
			"endpoint", ss.c.endpoint, "member", member, "sessions_lost_young", n, "last", describe(cause))
	}
	return v
}

// answered counts an answer on s, up to what proves that its replica keeps
// it: from then on it is one atomic load a call.
func (ss *sessions) answered(s *session) {
	if s.answers.Load() >= policy.ProvenAnswers || s.answers.Add(1) != policy.ProvenAnswers {
		return
	}
	a := &ss.members[s.member].affinity
	if a.young.Load() != 0 || a.heldUntil.Load() != 0 {
		a.young.Store(0)
		a.heldUntil.Store(0)
		ss.affinityReported.Store(false)
	}
}

// isNoAffinity reports whether err is a verdict of no affinity.
func isNoAffinity(err error) bool { return errors.Is(err, ErrNoAffinity) }
