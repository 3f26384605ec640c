package observe

import (
	"fmt"
	"os"
	"time"
)

// Event is something that happened outside calls: HandleEvent's argument,
// one of the types below. Each is a plain value.
type Event interface{ isEvent() }

// SessionOpened: a session went into service. A plain value.
type SessionOpened struct {
	Session         string // Mcp-Session-Id, "" in the stateless era
	ProtocolVersion string
	Reason          OpenReason
}

// OpenReason is why a session was put into service.
type OpenReason int

// Why a session is put into service.
const (
	// OpenFirst: a pool member's first session (its first dial).
	OpenFirst OpenReason = iota
	// OpenReinitialize: the session before it expired (a restart, an idle
	// timeout, a new protocol version).
	OpenReinitialize
	// OpenRedial: the session before it died (its connection, its probes)
	// or answered another request.
	OpenRedial
	// OpenRequested: the caller called client.ResilientClient.Initialize
	// with another request.
	OpenRequested
	// OpenKept: the server could not be reached for a while, and the
	// session survived it: it goes back into service, nothing was opened.
	OpenKept
)

// String is "first", "reinitialize", "redial", "requested" or "kept".
func (r OpenReason) String() string {
	switch r {
	case OpenFirst:
		return "first"
	case OpenReinitialize:
		return "reinitialize"
	case OpenRedial:
		return "redial"
	case OpenRequested:
		return "requested"
	case OpenKept:
		return "kept"
	}
	return fmt.Sprintf("OpenReason(%d)", int(r))
}

// SessionLost: a session was taken out of service, and a new one is being
// opened (the reconnect loop), once per loss. A plain value.
type SessionLost struct {
	Session string
	Reason  LossReason
	Cause   error // what the client met: the 404, the failed probe, the broken connection
}

// LossReason is why a session was taken out of service.
type LossReason int

// Why a session is lost.
const (
	// LossExpired: it expired, or the server speaks another protocol
	// version now.
	LossExpired LossReason = iota
	// LossUnreachable: no connection could be made to the server; the
	// session may have survived, and is asked once the server answers.
	LossUnreachable
	// LossUnhealthy: it failed its probes: the connection is dead or hung.
	LossUnhealthy
	// LossCorrupt: it answered another request (a wrong JSON-RPC id).
	LossCorrupt
	// LossRequested: the caller called client.ResilientClient.Initialize
	// with another request.
	LossRequested
)

// String is "expired", "unreachable", "unhealthy", "corrupt" or
// "requested".
func (r LossReason) String() string {
	switch r {
	case LossExpired:
		return "expired"
	case LossUnreachable:
		return "unreachable"
	case LossUnhealthy:
		return "unhealthy"
	case LossCorrupt:
		return "corrupt"
	case LossRequested:
		return "requested"
	}
	return fmt.Sprintf("LossReason(%d)", int(r))
}

// SessionClosed: a session's mcp-go client was closed, its life over: it
// was replaced, or the client closed. A plain value.
type SessionClosed struct {
	Session         string
	ProtocolVersion string
	Duration        time.Duration // since it was opened
	// Lost is why it was taken out of service, if it was lost; Cause the
	// loss's cause. Nil Cause: it ended normally (Close, a new Initialize
	// request).
	Lost  LossReason
	Cause error
}

// SessionState: a session slot of the pool (client.WithPoolSize) changed
// state; the client's State is the best of its slots'. Delivered in order,
// on the goroutine that delivers client.WithStateHandler's transitions. A
// plain value.
type SessionState struct{ From, To State }

// Probed: a probe (keepalive, or before a call on a session not heard from
// for a while) answered, or failed with Err. A plain value.
type Probed struct {
	Session string
	Err     error
	// Busy: the server declined the probe unread (503, 429); the session
	// is kept.
	Busy bool
}

// DialFailed: the reconnect loop could not open a session; it tries again
// after RetryIn. A plain value.
type DialFailed struct {
	Err     error
	RetryIn time.Duration
}

// TokenRenewed: the OAuth token layer (client.WithOAuth) renewed the
// client's token, or failed to. A plain value.
type TokenRenewed struct {
	// Refresh: a refresh token was spent; else the client authorized (the
	// user through client.OAuthConfig.Authorize, or client credentials).
	Refresh bool
	// Err is nil when a token came. ErrorType is its class: the
	// authorization failure's reason ("invalid_grant", "denied", ...),
	// "unavailable" (the authorization server or the grant store could not
	// be reached), or "_OTHER".
	Err       error
	ErrorType string
}

// BreakerState: the circuit breaker (client.WithFailFastAfter) opened,
// because the server had been unreachable since OutageSince for longer than
// the option's duration, or closed, because a session is in service again.
// While it is open, calls fail at once with client.ErrUnavailable.
// Delivered in order, on the goroutine that delivers
// client.WithStateHandler's transitions. A plain value.
type BreakerState struct {
	Open        bool
	OutageSince time.Time
}

// ProcessStarted is the event of a stdio server's process started. A
// plain value.
type ProcessStarted struct {
	PID     int
	Member  int  // the pool member it serves
	Restart bool // not the member's first process
}

// ProcessExited is the event of a stdio server's process that exited:
// crashed, or ended by the client (Stopped). A plain value.
type ProcessExited struct {
	Exit    ProcessExit
	Member  int
	Stopped bool
}

// ProcessExit is how a stdio server's process ended. A plain value.
type ProcessExit struct {
	PID int
	// Code is the exit status; -1 if a signal ended the process (Signal).
	Code   int
	Signal os.Signal // nil if it exited by itself
	When   time.Time
	Uptime time.Duration
	// StderrTail is the last lines it wrote to stderr (at most 20, each cut
	// at 1 KiB).
	StderrTail []string
}

// String is "exit status 1" or "signal: killed", as os/exec says it.
func (e ProcessExit) String() string {
	if e.Signal != nil {
		return "signal: " + e.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// State is the connectivity of a ResilientClient, after grpc-go's
// connectivity states.
type State int

const (
	Idle         State = iota // no session yet, or the last dial failed with an error retrying cannot fix, or the backoff schedule ended
	Connecting                // opening the first session
	Ready                     // a session is serving calls
	Degraded                  // a session failed a probe; calls still go to it while it is checked again
	Reconnecting              // a session was lost; the reconnect loop dials, with backoff
	Closed                    // Close was called
)

// String returns the state's name, "Ready" for Ready.
func (s State) String() string {
	switch s {
	case Idle:
		return "Idle"
	case Connecting:
		return "Connecting"
	case Ready:
		return "Ready"
	case Degraded:
		return "Degraded"
	case Reconnecting:
		return "Reconnecting"
	case Closed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

func (SessionOpened) isEvent()  {}
func (BreakerState) isEvent()   {}
func (SessionLost) isEvent()    {}
func (SessionClosed) isEvent()  {}
func (SessionState) isEvent()   {}
func (Probed) isEvent()         {}
func (DialFailed) isEvent()     {}
func (TokenRenewed) isEvent()   {}
func (ProcessStarted) isEvent() {}
func (ProcessExited) isEvent()  {}
