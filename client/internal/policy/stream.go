package policy

import (
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// A session's notification stream is kept open by a loop: the session
// era's GET event stream by mcp-go's listener (a transport made to listen)
// or by the client's own (a stream wanted after the session opened, F32);
// the stateless era's subscriptions/listen by the client's. Whenever a
// stream ends or is refused, the loop asks AfterStream what follows, so
// that every loop decides alike: mcp-go's, which the client cannot steer
// but can stop, is stopped when AfterStream says StreamStop, and its own
// pause between openings (a fixed second) is mcp-go's.

// StreamOpened reports whether the answer to an event stream's GET opened
// it.
func StreamOpened(status int) bool { return status == http.StatusOK }

// StreamRefusal is what an answer other than 200 to an event stream's GET
// says of its session, before anything is asked.
type StreamRefusal int

const (
	// StreamServed: a refusal that says nothing of the session (a 5xx, a
	// server in trouble; a 429; a 401): AfterStream decides on it alone.
	StreamServed StreamRefusal = iota
	// StreamAbsent: 405, the server has no event stream. It is not asked
	// for again on this session (AfterStream stops the loop; mcp-go's
	// listener stops by itself); each new session asks once (F8).
	StreamAbsent
	// StreamSessionExpired: a 404 or a 400 to a stream the server accepted
	// before on this session: the session expired (F27).
	StreamSessionExpired
	// StreamAskSession: a 404 or a 400 to a stream refused from the start:
	// either a server that does not offer the stream (it should say 405;
	// some say 404 or 400) or a session that expired before its stream
	// first went out (a restart between the session's opening and
	// its stream, or before a late handler opened it). The session is
	// asked once, with a probe, and replaced only if the probe's loss is
	// LossExpired; if it answers, the server has no stream, as for 405.
	StreamAskSession
)

// StreamRefused decides what the answer status to an event stream's GET
// says of its session, given whether the server accepted the stream
// before.
func StreamRefused(status int, openedBefore bool) StreamRefusal {
	switch {
	case status == http.StatusMethodNotAllowed:
		return StreamAbsent
	case status != http.StatusNotFound && status != http.StatusBadRequest:
		return StreamServed
	case openedBefore:
		return StreamSessionExpired
	}
	return StreamAskSession
}

// StreamAnswer is what a session-era event stream's GET met, when it did
// not open the stream.
type StreamAnswer struct {
	// Err: the request failed without an answer (no connection, a reset).
	Err error
	// Status of the answer, and its Retry-After; 0 when none came.
	Status     int
	RetryAfter time.Duration
	// OpenedBefore: the server accepted the stream on this session before.
	OpenedBefore bool
	// For StreamAskSession, what the probe of the session found:
	// SessionAlive, the server knows the session (so it has no stream);
	// SessionExpired, the session expired; neither, the probe could not tell
	// (the server is unreachable or busy) and the next refusal asks again.
	SessionAlive, SessionExpired bool
}

// StreamVerdict classifies a failed opening of a session-era event stream,
// as Classify does a request's failure: mcp-go has no error for a GET the
// client sends itself, so the rules are by status. They are Classify's but
// for two: any other 5xx is Broken (Classify's OutcomeUnknown or Rejected,
// but for a 500 with a body; the loop reopens after any of them), and any other 4xx, 408 and 425 included,
// is the server's answer (Classify: Rejected or NotSent), which stops the
// loop.
func StreamVerdict(a StreamAnswer) Verdict {
	switch {
	case a.Status == 0 && wire.IsDialError(a.Err):
		return Verdict{Class: NotSent, Unreachable: true, Why: "the server is unreachable"}
	case a.Status == 0:
		return Verdict{Class: OutcomeUnknown, Sent: true, Why: "the connection failed"}
	}
	switch StreamRefused(a.Status, a.OpenedBefore) {
	case StreamAbsent:
		return Verdict{Class: ServerError, Why: "the server has no event stream"}
	case StreamSessionExpired:
		return Verdict{Class: Expired, SessionExpired: true, Why: "the session expired"}
	case StreamAskSession:
		switch {
		case a.SessionExpired:
			return Verdict{Class: Expired, SessionExpired: true, Why: "the session expired: its probe says so too"}
		case a.SessionAlive:
			return Verdict{Class: ServerError, Why: "the server has no event stream: it refused it on a session it knows"}
		}
		return Verdict{Class: NotSent, Why: "the session's probe could not tell whether the server knows it"}
	}
	switch {
	case a.Status == http.StatusUnauthorized, a.Status == http.StatusForbidden:
		return Verdict{Class: AuthRequired, Why: "authorization refused"}
	case a.Status == http.StatusTooManyRequests, a.Status == http.StatusServiceUnavailable:
		return Verdict{Class: NotSent, Busy: true, RetryAfter: a.RetryAfter, Why: "the server is busy"}
	case a.Status == http.StatusBadGateway, a.Status == http.StatusGatewayTimeout:
		return Verdict{Class: OutcomeUnknown, Sent: true, Why: "a proxy lost the server"}
	case a.Status >= 500:
		return Verdict{Class: Broken, Sent: true, Why: "the server failed"}
	case a.Status >= 400:
		return Verdict{Class: ServerError, Why: "the server refused it"}
	}
	// A 2xx other than 200, a 3xx net/http did not follow: not a stream.
	return Verdict{Class: Broken, Sent: true, Why: "the answer was not a stream"}
}

// StreamNext is what a loop keeping a notification stream does next.
type StreamNext int

const (
	// StreamReopen: ask for the stream again, after StreamAction.Pause.
	StreamReopen StreamNext = iota
	// StreamRenew: the session expired, the server changed its protocol
	// version, or the session answered another request: take it out of
	// service (StreamAction.Discard); the session that replaces it opens
	// its own stream.
	StreamRenew
	// StreamStop: stop asking for the stream on this session: the server
	// has none (405, or 404/400 on a session it knows), or answered what no
	// retry can fix (a JSON-RPC error, such as a method it does not have; a
	// 4xx to the session era's GET; a refusal of authorization, which the token layer already
	// answered with a new token once). A new session, or a change of what
	// is listened for, asks again.
	StreamStop
)

func (n StreamNext) String() string {
	return [...]string{"reopen", "renew the session", "stop"}[n]
}

// StreamAction is what follows the end of a notification stream.
type StreamAction struct {
	Next    StreamNext
	Discard Loss          // for StreamRenew: why the session goes
	Pause   time.Duration // for StreamReopen: how long to wait first
	Why     string        // what the failure was, for the log
}

// AfterStream decides what follows a notification stream's failed opening
// (or a stream cut), classified as v: by Classify for subscriptions/listen,
// by StreamVerdict for the session era's GET. It sets no pause;
// StreamRetries.After, which the client's loops use, adds it.
func AfterStream(v Verdict) StreamAction {
	a := StreamAction{Why: v.Why}
	switch {
	case v.Corrupt:
		a.Next, a.Discard = StreamRenew, LossCorrupt
	case v.Class == Expired, v.SessionExpired:
		a.Next, a.Discard = StreamRenew, LossExpired
	case v.Class == ServerError, v.Class == AuthRequired, v.Class == Caller:
		// The server's own answer, which asking again would only repeat;
		// or the loop's context ended.
		a.Next = StreamStop
	}
	if a.Why == "" {
		a.Why = v.Class.String()
	}
	return a
}

// StreamRetries is one stream loop's account: it spaces the openings of
// the stream by the client's backoff, which is never reset (a stream that
// opens and ends at once must not become a loop of requests). It belongs
// to one loop and is not safe for concurrent use.
type StreamRetries struct {
	NewBackOff func() backoff.BackOff // WithBackOff
	pauses     backoff.BackOff
}

// StreamEnd is how one opening of a notification stream ended.
type StreamEnd struct {
	// Failed: the stream's request failed, as Verdict says. Else the server
	// accepted the stream, and it ended since (the server closed it, or the
	// network cut it): it is opened again.
	Failed  bool
	Verdict Verdict
}

// After decides what the loop does once the stream ended as end says:
// AfterStream's decision, with the pause before reopening: the backoff's
// next, or longer if the server asked for it (Retry-After). A backoff that
// ends (a WithBackOff schedule with a maximum elapsed time) stops the loop,
// as it ends the reconnect loop.
func (r *StreamRetries) After(end StreamEnd) StreamAction {
	a := StreamAction{Why: "the stream ended"}
	if end.Failed {
		if a = AfterStream(end.Verdict); a.Next != StreamReopen {
			return a
		}
	}
	if r.pauses == nil {
		r.pauses = r.NewBackOff()
	}
	pause := r.pauses.NextBackOff()
	if pause == backoff.Stop {
		a.Next, a.Why = StreamStop, join(a.Why, "the backoff schedule ended")
		return a
	}
	a.Pause = max(pause, end.Verdict.RetryAfter)
	return a
}
