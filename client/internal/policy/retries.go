package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Retries is one call's account of its failed attempts. After decides, once
// per class of failure and in this one place, what the call does next. It
// belongs to one call and is not safe for concurrent use.
type Retries struct {
	Max        int                    // WithMaxAttempts
	PoolSize   int                    // WithPoolSize
	NewBackOff func() backoff.BackOff // WithBackOff
	// RetryableRPC: the JSON-RPC error codes a safe call is replayed
	// after (WithRetryableRPCCodes).
	RetryableRPC []int

	// Sends counts every send, for the error message.
	Sends int
	// MayHaveRun: some attempt may have run on the server; the call's
	// error is then ErrOutcomeUnknown, else ErrUnavailable.
	MayHaveRun bool
	// Answered: the server answered the last attempt with a JSON-RPC
	// error: whatever ends the call, that answer is the server's word,
	// and a listing is not answered stale in its place (StaleIfError).
	Answered bool
	// Revalidate: probe the session before the next send, if it is no
	// newer than doubtSince (Doubts).
	Revalidate bool
	doubtSince time.Time
	// CtxErr is the caller's context's error, once it ended.
	CtxErr error

	// attempts counts sends that may have reached the server's handler
	// (outcome unknown); resends after an expiry have their own count
	// (expiries), so that a call spanning two restarts is not failed for it,
	// while a server that answers 404 to everything still cannot hold a
	// call in a loop. Sends that provably did not run are bounded by the
	// deadline and the retry budget, not counted.
	attempts, expiries int
	renegotiated       bool
	staleRetried       bool            // the one free retry after a stale pooled connection is spent
	pauses             backoff.BackOff // made on the first retry that must wait
	drained            time.Duration   // paused for after answers with a retryable JSON-RPC code (DrainWait)
	// codeDoubt: the last answer carried a retryable code, and the
	// session is probed before the resend (Probed); serving: that probe
	// was answered, so the server serves and its code is its answer.
	codeDoubt, serving bool
}

// Probed records that the session the call is about to be sent on
// answered the probe its doubt asked for (Doubts).
func (r *Retries) Probed() {
	if r.codeDoubt {
		r.serving = true
	}
}

// Ending is how a call ends after a failed attempt, if it does.
type Ending int

const (
	// Continue: the call goes on (Action says how).
	Continue Ending = iota
	// AsIs: return the failure as it is: the server's own answer.
	AsIs
	// Unauthorized: the server wants authorization; the request did not run.
	Unauthorized
	// GiveUp: ErrOutcomeUnknown if the call MayHaveRun, else
	// ErrUnavailable, with Why.
	GiveUp
)

// Action is what a call does after a failed attempt.
type Action struct {
	End  Ending
	Why  string  // for GiveUp: what the failure was
	Also []error // for GiveUp: what else the error wraps (the context's error)

	Discard   Loss // take the session out of service first, for this cause; NoLoss keeps it
	Reconnect bool // not a retry: wait for a session from the reconnect loop
	CloseIdle bool // drop the HTTP client's idle connections
	Budget    bool // the retry is paid from the shared retry budget
	Expired   bool // the retry is a resend after the session expired, on a new session
	Pause     time.Duration
	Refused   bool // a replay refused because the call is not safe to repeat
}

func giveUp(why string, also ...error) Action { return Action{End: GiveUp, Why: why, Also: also} }

// After decides what follows a failed attempt. safe is asked only when the
// outcome is unknown; it may list the server's tools to answer.
func (r *Retries) After(v Verdict, safe func() bool, deadline time.Time) Action {
	r.Sends++
	r.MayHaveRun = r.MayHaveRun || v.MayHaveRun()
	r.Answered = v.Class == ServerError && v.RPCAnswer
	switch v.Class {
	case Caller:
		// The caller's context's own error goes in the chain: what mcp-go
		// returns when a context ends is not always built on it (a stream
		// cut at the deadline reads as "unexpected nil response").
		why := "cancelled"
		if errors.Is(r.CtxErr, context.DeadlineExceeded) {
			why = "no answer before the deadline"
			switch {
			case r.MayHaveRun:
			case v.Status != 0:
				why = "the deadline passed after the server declined the request (HTTP " + strconv.Itoa(v.Status) + ")"
			default:
				why = "the deadline passed before the request was sent"
			}
		}
		if r.CtxErr == nil {
			return giveUp(why)
		}
		return giveUp(why, r.CtxErr)

	case ServerError:
		if !v.RetryableCode(r.RetryableRPC) {
			return Action{End: AsIs}
		}
		return r.afterRetryableCode(v.RPCCode, safe, deadline)

	case Rejected:
		// Refused by HTTP's rules: it did not run, and would be refused
		// again.
		return giveUp("the request was refused")

	case AuthRequired:
		return Action{End: Unauthorized}

	case Expired:
		// Every goroutine that used this lease's generation sees this; the
		// first Discard starts the one re-initialization, the others are
		// no-ops and wait for it in Acquire. Not paid from the budget: the
		// generation gate already makes it one re-initialization for every
		// caller.
		if v.Renegotiate {
			if r.renegotiated {
				return Action{End: AsIs}
			}
			r.renegotiated = true
		}
		// One restart expires every session of a pool, and a call may meet
		// each of them once before it meets a new one.
		a := Action{Discard: LossExpired, Expired: true}
		if r.expiries++; r.expiries > r.Max+r.PoolSize-1 {
			a.End, a.Why = GiveUp, fmt.Sprintf("the session expired %d times in a row", r.expiries)
		}
		return a

	case NotSent:
		if v.Unreachable {
			// Nothing reached the server. Hand the waiting to the reconnect
			// loop, which tries on the backoff schedule for every caller at
			// once; it is not a retry of the call.
			return Action{Discard: LossUnreachable, Reconnect: true}
		}
		if v.IdleClosed {
			// Not paid for with a pause: the other idle connections went
			// with it (a restart), so drop them all and send at once.
			return Action{CloseIdle: true, Budget: true}
		}
		// Declined unread (408, 425, 429, 503), not written, left
		// unprocessed by a failing HTTP/2 peer, or no token to be had from
		// an unavailable authorization server: wait as the server asks, or
		// by the backoff, for as long as the deadline allows.
		a := Action{Pause: max(v.RetryAfter, r.NextPause()), Budget: true}
		if !deadline.IsZero() && time.Until(deadline) < a.Pause {
			a.End, a.Also = GiveUp, []error{context.DeadlineExceeded}
			a.Why = fmt.Sprintf("the deadline leaves no time for the %v pause before trying again", a.Pause.Round(time.Millisecond))
		}
		return a

	case OutcomeUnknown:
		a := Action{CloseIdle: true}
		switch {
		case v.Corrupt:
			a.Discard = LossCorrupt
		case v.SessionExpired:
			a.Discard = LossExpired
		}
		if !safe() {
			a.Refused = true
			a.End, a.Why = GiveUp, join(v.Why, "not safe to repeat")
			return a
		}
		if v.StaleConnection && !r.staleRetried {
			// A pooled connection that died says nothing of the server; a
			// restart can fail several at once. Replayed at once, on a
			// new connection; paid from the budget, but not counted
			// against the call's attempts. Once per call: a server that
			// drops every answer must not double the attempts.
			r.staleRetried = true
			a.Budget = true
			return a
		}
		if r.attempts++; r.attempts >= r.Max {
			a.End, a.Why = GiveUp, v.Why
			return a
		}
		// Before replaying, ask the session whether the server
		// answers: a server that is down then fails the probe, the session
		// goes to the reconnect loop, and the call waits for it on the
		// backoff schedule instead of spending its attempts in
		// milliseconds.
		r.Revalidate, r.doubtSince = true, time.Now()
		a.Budget = true
		return a

	case Broken:
		return giveUp("the answer was not usable")
	}
	return Action{End: AsIs}
}

// DrainWait bounds how long a call safe to repeat keeps being resent after
// answers carrying a retryable JSON-RPC code (WithRetryableRPCCodes): the
// pauses it took after them, in all; the call's deadline and the retry
// budget bound it too.
//
// A drain ends; a bug does not. Such an answer only says the server does
// not serve now if the server answers nothing else either: a gateway whose
// child restarts answers its probe (ping, server/discover) with the same
// code. So each resend is preceded by a probe of the session (Doubts,
// shared by every call waiting on it): a server that answers the probe
// serves, and the code it answers the call with again is its answer, as
// is (issue 43: a -32603 from a server that is plainly up came back after
// 7 s of resends, and in place of a listing, a stale one). One pause, one
// probe and one resend, instead of nine resends over 7 s.
//
// Such an answer (-32603 from a gateway whose stdio child died in a
// restart) comes back at once and says the server does not serve now, as a
// 503 does; what ends it is time, the child starting again, not a number of
// tries. WithMaxAttempts is for failures that may have run the call and
// come back at once with nothing to wait for; three of them here are spent
// in a second, inside the drain. So these sends are paced by the backoff
// and not counted against it, and their cap is a time, which a count of
// tries would only stand for under one backoff schedule.
//
// Why 10 s: a gateway's child restarts in seconds (a process, a runtime
// such as npx's, its own start); a 2 s drain is what the issue met. 10 s
// covers several times that, and is the default backoff's longest pause
// and the retry budget's window. Under the default backoff it is 9 sends
// at most, about 7 s apart from first to last, each paid from the budget:
// never a burst. mcp-go's servers answer -32603 to any error of a tool's
// handler: a safe tool that fails every time answers its caller after one
// pause, one probe and one resend (the probe rule above), with the
// server's error; a caller who wants such answers at once removes the
// code from the list.
const DrainWait = 10 * time.Second

// RetryableCode reports whether v is the server's answer with a JSON-RPC
// error whose code is one of codes (WithRetryableRPCCodes): a server that
// does not serve now.
func (v Verdict) RetryableCode(codes []int) bool {
	return v.Class == ServerError && v.RPCAnswer && v.RPCCode != 0 && slices.Contains(codes, v.RPCCode)
}

// DialEnds reports whether a failed dial ends the pool's dial loop: a
// Permanent failure, but for an answer with a retryable code, which the
// loop tries again on its backoff schedule, as after a 503: a session that
// expires while a gateway's child restarts is opened again once it is back.
func DialEnds(v Verdict, retryable []int) bool {
	return v.Permanent() && !v.RetryableCode(retryable)
}

// afterRetryableCode decides what follows an answer with a JSON-RPC error
// code the caller listed as passing (WithRetryableRPCCodes).
func (r *Retries) afterRetryableCode(code int, safe func() bool, deadline time.Time) Action {
	// The request reached a handler, which may have run it before its
	// process died: the answer does not say.
	r.MayHaveRun = true
	why := fmt.Sprintf("the server answered JSON-RPC error %d", code)
	if !safe() {
		return Action{End: GiveUp, Why: join(why, "not safe to repeat"), Refused: true}
	}
	if r.serving {
		// Between two such answers the server answered a probe: it
		// serves, and the code is its answer to this request (a bug, not
		// a drain), returned as it is.
		return Action{End: AsIs}
	}
	// Before the resend, the session is asked whether the server serves:
	// a drain answers the probe as it answered the call.
	r.codeDoubt, r.Revalidate, r.doubtSince = true, true, time.Now()
	a := Action{Pause: r.NextPause(), Budget: true}
	switch {
	case a.Pause == backoff.Stop:
		a.End, a.Why = GiveUp, join(why, "the backoff schedule ended")
	case r.drained+a.Pause > DrainWait:
		a.End, a.Why = GiveUp, fmt.Sprintf("%s after %v of pauses", why, r.drained.Round(time.Millisecond))
	case !deadline.IsZero() && time.Until(deadline) < a.Pause:
		a.End, a.Also = GiveUp, []error{context.DeadlineExceeded}
		a.Why = fmt.Sprintf("%s; the deadline leaves no time for the %v pause before trying again", why, a.Pause.Round(time.Millisecond))
	}
	r.drained += a.Pause
	return a
}

// Doubts reports whether a session opened at opened is probed before the
// call is sent on it: an attempt broke in a way that leaves the server's
// health in doubt, and the session is no newer than the doubt. A restart
// takes every session of a pool with it (F41): each one the call is about
// to use is asked first, and the dead ones are replaced without spending
// the call's attempts, until a session opened since (which has just shown
// that the server answers) or one that answers its probe.
func (r *Retries) Doubts(opened time.Time) bool {
	return r.Revalidate && !opened.After(r.doubtSince)
}

// join joins two parts of an error's why.
func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// NextPause is the next pause of the call's backoff.
func (r *Retries) NextPause() time.Duration {
	if r.pauses == nil {
		r.pauses = r.NewBackOff()
	}
	return r.pauses.NextBackOff()
}
