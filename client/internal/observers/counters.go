package observers

import (
	"sync/atomic"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/observe"
)

// The classes of the client's own errors, as CallEnd.ErrorType names them:
// what the client's class function (New) and Counters.Record are given.
const (
	ClassOutcomeUnknown        = "outcome_unknown"
	ClassUnavailable           = "unavailable"
	ClassAuthorizationRequired = "authorization_required"
	ClassInsufficientScope     = "insufficient_scope"
	ClassClosed                = "closed"
)

// Counters are the client's counters since New, which its Stats reads.
// The client holds them by value, observers or not. They are safe for
// concurrent use.
type Counters struct {
	Calls, Retries, Replays                            atomic.Uint64
	Reinitializations, Redials                         atomic.Uint64
	Probes, ProbeFailures                              atomic.Uint64
	OutcomeUnknown, Unavailable, AuthorizationRequired atomic.Uint64
	WrongAnswers, FailedFast                           atomic.Uint64
	SessionsOpened, SessionsLost                       atomic.Uint64
	CacheHits, StaleAnswers                            atomic.Uint64
	ParserFallbacks                                    atomic.Uint64
	lastLoss                                           atomic.Int32 // policy.Loss
	// InFlight: 32 bits, beside lastLoss in one word (the client's
	// TestClientSizeClass).
	InFlight atomic.Int32
}

// Lost counts a session lost for kind.
func (s *Counters) Lost(kind policy.Loss) {
	s.SessionsLost.Add(1)
	s.lastLoss.Store(int32(kind))
}

// LastLoss is why the last session counted by Lost was lost.
func (s *Counters) LastLoss() observe.LossReason {
	return LossReason(policy.Loss(s.lastLoss.Load()))
}

// Record counts a failed call by what its error says of the request: its
// class among the client's own errors (ClassOutcomeUnknown...).
func (s *Counters) Record(class string) {
	switch class {
	case ClassOutcomeUnknown:
		s.OutcomeUnknown.Add(1)
	case ClassUnavailable:
		s.Unavailable.Add(1)
	case ClassAuthorizationRequired:
		s.AuthorizationRequired.Add(1)
	}
}
