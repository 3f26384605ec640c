package client

import (
	"time"

	"github.com/resilientmcp/resilientmcp/client/observe"
)

// Stats are counters since New, for dashboards and tests: a snapshot, a
// plain value, taken by ResilientClient.Stats.
type Stats struct {
	Calls             uint64 // calls made
	Retries           uint64 // attempts beyond a call's first
	Replays           uint64 // of the retries, the resends after the session expired (the name is older than the glossary, where a replay is a retry after an unknown outcome)
	Reinitializations uint64 // new sessions opened because the old one expired (404, or 400 to a session that had served)
	Redials           uint64 // new sessions opened because the old one was lost otherwise: its connection broke or hung, it failed its probes, it answered another request
	Probes            uint64 // probes sent: keepalive, and before a call on a session not heard from within the keepalive interval or in doubt
	ProbeFailures     uint64 // probes that failed (a busy answer, 503 or 429, is not a failure)

	// OutcomeUnknown counts calls that returned ErrOutcomeUnknown: among
	// them every replay refused because the call was not safe to repeat.
	OutcomeUnknown uint64
	// Unavailable counts calls that returned ErrUnavailable.
	Unavailable uint64

	// TokenRefreshes, TokenRefreshFailures and Authorizations count the
	// work of the authorization flow; AuthorizationRequired counts calls
	// that returned ErrAuthorizationRequired.
	TokenRefreshes, TokenRefreshFailures, Authorizations uint64
	AuthorizationRequired                                uint64 // calls that returned ErrAuthorizationRequired

	// DroppedNotifications counts notifications dropped because the
	// handlers were more than 1024 behind.
	DroppedNotifications uint64

	// WrongAnswers counts answers that carried another request's id. Each
	// is refused, and its session replaced: one client's answer delivered
	// to another's call, by a server or a proxy that mixes up requests.
	WrongAnswers uint64

	// FailedFast counts calls that ended with ErrUnavailable without
	// waiting for a session: FailFast calls after a failed reconnect
	// attempt, and every call while the circuit breaker was open.
	FailedFast uint64
	// SessionsOpened counts the sessions the server opened for the
	// client (initialize answered), those that expired before the
	// handshake was over included; SessionsLost the sessions taken out of service,
	// or lost in their handshake; LastLoss is why the last of them was
	// lost (meaningful once SessionsLost is not 0).
	SessionsOpened, SessionsLost uint64
	LastLoss                     observe.LossReason

	// CacheHits counts listings and reads answered from the cache within
	// the ttlMs the server gave (no request sent); StaleAnswers those
	// answered with the last good answer, marked stale, because the server
	// could not answer (WithMaxStale). Both are counted in Calls too.
	CacheHits, StaleAnswers uint64

	// ParserFallbacks counts the JSON answers to tools/calls the client
	// sent itself that its own reader left to mcp-go's parser: a JSON-RPC
	// error, a result it does not recognise (a content type it does not
	// read, a result asking for input, keys in another case...), an
	// answer over 1 MiB. mcp-go reads them as it always has. Answers sent
	// as an event stream are mcp-go's to read, and not counted.
	ParserFallbacks uint64

	Sessions int // sessions in service now
	InFlight int // calls in progress now
	// FailingFast: the circuit breaker (WithFailFastAfter) is open now:
	// the server has been unreachable since OutageSince for longer than
	// the option allows, and calls fail at once until a session is back;
	// or a stdio server is crash-looping (WithRestartLimit) with no
	// process in service.
	FailingFast bool
	// OutageSince is when the current outage began (the failure that left
	// no session in service); the zero Time when there is none.
	OutageSince time.Time

	// Of a stdio server's processes (NewStdio); zero over HTTP. Restarts
	// counts the processes started after a member's first (a start after
	// WithIdleStop's stop is a first again); LastExit is how
	// the last one that exited ended (zero When: none yet); PID is the
	// process of the first member running now, 0 if none; StdoutSkipped
	// counts the stdout lines that were not JSON-RPC.
	Restarts      uint64
	LastExit      observe.ProcessExit
	PID           int
	StdoutSkipped uint64
}

// Stats returns a snapshot of the client's counters.
func (c *ResilientClient) Stats() Stats {
	var refreshes, refreshFailures, authorizations uint64
	if c.oauth != nil {
		refreshes, refreshFailures, authorizations = c.oauth.Counts()
	}
	st := Stats{
		TokenRefreshes:        refreshes,
		TokenRefreshFailures:  refreshFailures,
		Authorizations:        authorizations,
		Calls:                 c.stats.Calls.Load(),
		Retries:               c.stats.Retries.Load(),
		Replays:               c.stats.Replays.Load(),
		Reinitializations:     c.stats.Reinitializations.Load(),
		Redials:               c.stats.Redials.Load(),
		Probes:                c.stats.Probes.Load(),
		ProbeFailures:         c.stats.ProbeFailures.Load(),
		OutcomeUnknown:        c.stats.OutcomeUnknown.Load(),
		Unavailable:           c.stats.Unavailable.Load(),
		AuthorizationRequired: c.stats.AuthorizationRequired.Load(),
		DroppedNotifications:  c.messages.Dropped(),
		WrongAnswers:          c.stats.WrongAnswers.Load(),
		FailedFast:            c.stats.FailedFast.Load(),
		SessionsOpened:        c.stats.SessionsOpened.Load(),
		SessionsLost:          c.stats.SessionsLost.Load(),
		LastLoss:              c.stats.LastLoss(),
		CacheHits:             c.stats.CacheHits.Load(),
		StaleAnswers:          c.stats.StaleAnswers.Load(),
		ParserFallbacks:       c.stats.ParserFallbacks.Load(),
		Sessions:              c.sess.pool.Stats().Ready,
		InFlight:              int(c.stats.InFlight.Load()),
		FailingFast:           c.sess.brk.Load().Open(),
		OutageSince:           c.sess.brk.Load().OutageSince(),
	}
	c.sess.stdioStats(&st)
	return st
}
