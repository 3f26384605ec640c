package policy

import "time"

// Repeat is what a call's options say of replaying it, sending it again
// after an attempt that may have run (client.SafeToRepeat,
// client.NeverRepeat).
type Repeat uint8

const (
	// RepeatByNature: the method decides; a tools/call, the tool's
	// annotations (WithRetryToolCall).
	RepeatByNature Repeat = iota
	// RepeatAlways: the caller vouches that running it twice does no harm.
	RepeatAlways
	// RepeatNever: the caller forbids a second run, whatever the method or
	// the annotations say.
	RepeatNever
)

// SafeToRepeat decides whether a call whose attempt may have run may be
// replayed. Only the outcome-unknown path (and a JSON-RPC code listed in
// WithRetryableRPCCodes) asks: a request that provably did not run (a
// refused connection, a 503, an expired session's 404) is resent whatever r
// says, since nothing ran. byNature is asked only when the
// options leave it to the method: for a tools/call it may list the
// server's tools.
func SafeToRepeat(r Repeat, byNature func() bool) bool {
	switch r {
	case RepeatAlways:
		return true
	case RepeatNever:
		return false
	}
	return byNature()
}

// Outage reports whether a failed attempt counts towards the circuit
// breaker (WithFailFastAfter): the server could not be reached, or failed
// as a whole (a transport failure, a 5xx, a 503 that declined it unread
// included). A tool's isError, a JSON-RPC error, a 4xx (a 429 too), a
// refusal (501, 505), a wrong answer and an expired session's 404 all prove
// the server is there; a pooled connection the server had closed says
// nothing of it; a caller's deadline proves nothing.
func (v Verdict) Outage() bool {
	switch v.Class {
	case Caller, ServerError, AuthRequired, Expired, Rejected:
		return false
	case NotSent:
		if v.Busy {
			return v.Status >= 500
		}
		// Unreachable, or a request not completely written on a connection
		// that broke; not a pooled connection the server had closed, which
		// says nothing of the server (IdleClosed).
		return !v.IdleClosed
	case OutcomeUnknown:
		if v.Corrupt {
			return false // a wrong answer came: the server is there
		}
		return v.Status == 0 || v.Status >= 500
	case Broken:
		return v.Status >= 500
	}
	return false
}

// WaitVerdict is what a call that finds no session in service does.
type WaitVerdict uint8

const (
	// KeepWaiting: wait, within the call's deadline, for the reconnect loop.
	KeepWaiting WaitVerdict = iota
	// FailFastNoSession: the caller asked to fail fast (client.FailFast)
	// and the last dial failed: ErrUnavailable now.
	FailFastNoSession
	// FailFastOutage: the circuit breaker is open: the outage (the server
	// unreachable or failing with 5xx, no session in service) has lasted
	// longer than WithFailFastAfter. ErrUnavailable now.
	FailFastOutage
)

// WhileNoSession decides whether a call without a session waits for one.
// failFast is the call's FailFast; attemptFailed says that the dial loop
// of every member the call could use has failed a dial since it began
// (pool.Waiting.Failed; while the first dial is under way a fail-fast call
// waits for it: a restart is usually over by then); breakerOpen that the outage has
// lasted longer than WithFailFastAfter.
func WhileNoSession(failFast, attemptFailed, breakerOpen bool) WaitVerdict {
	switch {
	case breakerOpen:
		return FailFastOutage
	case failFast && attemptFailed:
		return FailFastNoSession
	}
	return KeepWaiting
}

// BreakerOpen is the circuit breaker's rule: open once the outage, counted from
// the first failure of it that left no session in service, has lasted
// after. after 0 turns it off.
func BreakerOpen(since time.Time, after time.Duration, now time.Time) bool {
	return after > 0 && !since.IsZero() && now.Sub(since) >= after
}
