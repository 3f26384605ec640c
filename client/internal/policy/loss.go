package policy

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Loss is why a session was taken out of service; it decides how the
// session is closed and what replaces it.
type Loss int

const (
	NoLoss          Loss = iota // kept in service
	LossExpired                 // it expired, or the server changed protocol version: open a new one
	LossUnreachable             // no connection could be made: the session may be fine, ask it once the server answers
	LossRequested               // the caller initialized again with another request
	LossUnhealthy               // failed its probes: the connection is dead or hung
	LossCorrupt                 // answered another request: nothing it says can be trusted
)

// Drains reports whether a session lost for this reason is closed only
// when its last lease returns, as HikariCP evicts a connection: it expired
// or the caller asked for another, so calls in flight on it get
// their own answers rather than being cut by our own close. A dead, hung
// or corrupt session is closed at once, so that safe calls in flight on it
// are replayed.
func (l Loss) Drains() bool { return l == LossExpired || l == LossRequested }

// Reinitializes reports whether replacing a session lost for this reason
// is a re-initialization (it expired) rather than a redial (its connection
// broke or hung, it failed its probes, it answered another request). A
// session lost because the server was unreachable is neither: it is kept,
// or, if its probe says it is not alive (AfterRecheck's Reopen), it counts
// as expired and is re-initialized.
func (l Loss) Reinitializes() bool { return l == LossExpired }

// ProbeOutcome is what a probe's answer means for its session.
type ProbeOutcome int

const (
	// Alive: the server answered. A JSON-RPC error is an answer too: the
	// server is there and knows the session (one without ping, say).
	Alive ProbeOutcome = iota
	// Busy: the server declined the probe unread (503, 429). It is there
	// and asks for a pause; the session is kept (F30).
	Busy
	// Failed: the session failed; ProbeLoss says why it goes.
	Failed
)

// Probe is what a probe that failed with verdict v means for its session.
// An answer with a retryable code (WithRetryableRPCCodes, the codes given)
// is a server that does not serve now, as a 503 is: it says nothing of
// the session (a gateway whose child restarts answers it to everything).
func Probe(v Verdict, retryable []int) ProbeOutcome {
	switch {
	case v.Busy, v.RetryableCode(retryable):
		return Busy
	case v.RPCAnswer:
		return Alive
	}
	return Failed
}

// RetryProbe reports whether a failed probe is sent once more on a fresh
// connection: a failure that may be only a pooled connection the far side
// dropped while idle (F3, F4) says nothing of the session, and finding
// that out is exactly what probing after idle is for.
func RetryProbe(v Verdict) bool { return v.Class == OutcomeUnknown }

// ProbeLoss is why a session that failed a probe must go.
func ProbeLoss(v Verdict) Loss {
	switch {
	case v.Class == Expired:
		return LossExpired
	case v.Unreachable:
		return LossUnreachable
	}
	return LossUnhealthy
}

// Recheck is what the reconnect loop does with a session it kept while the
// server could not be reached, once the session's probe has failed.
type Recheck int

const (
	// StillAway: the server is still not answering, or busy: ask again on
	// the backoff schedule (Retry-After included, by the pool).
	StillAway Recheck = iota
	// StopDialing: the server wants authorization; no retry can fix it.
	StopDialing
	// Reopen: the server answers, and not as a live session would: open
	// another.
	Reopen
)

// AfterRecheck decides what the failed probe v of a kept session means;
// retryable: as Probe's.
func AfterRecheck(v Verdict, retryable []int) Recheck {
	switch {
	case v.Busy, v.RetryableCode(retryable), v.Class == NotSent, v.Class == Caller:
		return StillAway
	case v.Class == AuthRequired:
		return StopDialing
	}
	return Reopen
}

// KeepThroughOutage reports whether a session kept while the server could
// not be reached is only asked whether it survived (a probe) before it goes
// back into service, rather than replaced by a new one: only if it proves
// which server it is with (an Mcp-Session-Id the server issued, which
// another program on the port would refuse; a stdio server's own
// process). A sessionless server proves nothing by answering
// a probe: another program, or another version, may now listen on the
// port, and what the client knew of the old one (its identity, listings,
// the annotations a replay is decided on) would be kept on the new one's
// behalf. So it is asked who it is: a new session (initialize, or
// server/discover in the 2026-07-28 era), one round trip, once per outage,
// made by the pool's dial for every goroutine waiting on it; a changed
// identity then drops what was known of the old one.
func KeepThroughOutage(s Session) bool { return !s.Sessionless }

// Reidentify reports whether a failed attempt leaves a sessionless
// server's identity in doubt: the connection was lost under the request
// (its outcome unknown), as when the server's process dies, and the
// program that answers next on the port may be another. What the client
// relies on next is the tools' annotations, for the replay decision: they
// are listed again before it (one tools/list for every call that needs
// them), rather than the session replaced, which would cut the other
// calls in flight on it. An outage that follows replaces the session
// (KeepThroughOutage), which asks the server who it is.
func Reidentify(v Verdict, s Session) bool { return s.Sessionless && v.Class == OutcomeUnknown }

// AfterProbe decides what a failed probe of the session a call was about
// to be sent on means for the call: the call was not sent, so the probe's
// failure is the session's, never the call's outcome (F29). The session is
// replaced (Discard) and the call waits for another, within its deadline;
// a server that answered "busy" keeps its session and the call waits as
// asked (F30); only a refusal for want of authorization ends the call,
// which did not run.
func (r *Retries) AfterProbe(v Verdict, deadline time.Time) Action {
	switch Probe(v, r.RetryableRPC) {
	case Alive:
		// The server answers: the doubt is over.
		r.Revalidate = false
		return Action{}
	case Busy:
		if r.codeDoubt && v.RetryableCode(r.RetryableRPC) {
			// The probe was answered as the call was: a drain. The call
			// waits as it would have after a resend, and probes again,
			// one request per pause; once DrainWait, the backoff or the
			// deadline leave no pause, it is sent, for afterRetryableCode
			// to end it with its own answer.
			pause := r.NextPause()
			if pause == backoff.Stop || r.drained+pause > DrainWait ||
				!deadline.IsZero() && time.Until(deadline) < pause {
				r.Revalidate = false
				return Action{}
			}
			r.drained += pause
			return Action{Pause: pause}
		}
		r.Revalidate = false
		a := Action{Pause: max(v.RetryAfter, r.NextPause())}
		if !deadline.IsZero() && time.Until(deadline) < a.Pause {
			a.End = GiveUp
			a.Why = "the server is busy and the deadline leaves no time for the " + a.Pause.Round(time.Millisecond).String() + " pause"
		}
		return a
	}
	if v.Class == AuthRequired {
		r.Revalidate = false
		return Action{End: Unauthorized}
	}
	// The doubt stands for the pool's other sessions of the same age
	// (Doubts): the call waits for a live one rather than spend its
	// attempts on them.
	return Action{Discard: ProbeLoss(v)}
}
