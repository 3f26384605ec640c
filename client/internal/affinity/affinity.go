// Package affinity keeps what a client's sessions have shown of the
// deployment's session affinity, and the verdict of no affinity
// (policy.NoAffinity decides on it; F39): a session-era server behind a
// load balancer that sends each request of a session to any replica loses
// the session within its first requests, again and again. It does not
// import the client.
package affinity

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// ErrNoAffinity is client.ErrNoAffinity, declared here so that Error
// matches it; the client documents it.
var ErrNoAffinity = errors.New("resilientmcp: no session affinity: the load balancer sends a session's requests to replicas that do not know it; sticky sessions (by the Mcp-Session-Id header or by cookie) are needed")

// Error is the dial error of a pool member that stopped opening sessions
// for want of affinity. It matches ErrNoAffinity.
type Error struct {
	Young int32 // sessions lost young in a row
	Last  error // what the last one met
	// Report: the first verdict since a session last proved affinity;
	// the others are not logged or told to the observers again.
	Report bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("no session affinity: %d sessions in a row expired within their first requests: the load balancer sends a session's requests to replicas that do not know it; sticky sessions (by the Mcp-Session-Id header or by cookie) are needed; the last: %s", e.Young, wire.Describe(e.Last))
}

func (e *Error) Is(target error) bool { return target == ErrNoAffinity }
func (e *Error) Unwrap() error        { return e.Last }

// Member is what one pool member's sessions have shown. Safe for
// concurrent use: each field is an atomic of its own.
type Member struct {
	young     atomic.Int32          // sessions lost young in a row
	heldUntil atomic.Int64          // UnixNano; 0: no verdict
	verdict   atomic.Pointer[Error] // the last verdict
}

// Tracker is what the client's members share: whether the verdict was
// reported. The zero value is ready; safe for concurrent use.
type Tracker struct {
	// reported: a verdict was reported since a session last proved
	// affinity.
	reported atomic.Bool
}

// Held is the error a dial of m fails with at once while a verdict of no
// affinity holds, nil otherwise. It is not to be reported again.
func (m *Member) Held() error {
	if until := m.heldUntil.Load(); until == 0 || time.Now().UnixNano() >= until {
		return nil
	}
	if v := m.verdict.Load(); v != nil {
		held := *v
		held.Report = false
		return &held
	}
	return nil
}

// Lost counts a session of m lost (young, for cause) towards a verdict of
// no affinity, and returns the verdict if there is one now; its Report
// says whether it is the first since a session last proved affinity.
func (t *Tracker) Lost(m *Member, young bool, cause error) *Error {
	if !young {
		return nil
	}
	n := m.young.Add(1)
	if !policy.NoAffinity(n) {
		return nil
	}
	v := &Error{Young: n, Last: cause, Report: t.reported.CompareAndSwap(false, true)}
	m.verdict.Store(v)
	m.heldUntil.Store(time.Now().Add(policy.NoAffinityHold).UnixNano())
	return v
}

// Proven is told that a session of m answered policy.ProvenAnswers
// requests: its replica keeps it, and the count starts over.
func (t *Tracker) Proven(m *Member) {
	if m.young.Load() != 0 || m.heldUntil.Load() != 0 {
		m.young.Store(0)
		m.heldUntil.Store(0)
		t.reported.Store(false)
	}
}
