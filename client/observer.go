package client

import "github.com/resilientmcp/resilientmcp/client/observe"

// WithObserver has o told of every call the client makes for its caller,
// and of what it does on its own: sessions opened and lost, probes,
// reconnects, token renewals. It may be given several times: each observer
// is told everything, in the order they were given, and each call's context
// passes through all of them. Default none; without an observer the call
// path neither allocates nor calls anything for observation.
//
// otelmcp.NewObserver is an Observer that records OpenTelemetry traces and
// metrics by MCP's semantic conventions.
func WithObserver(o Observer) Option {
	return optionFunc(func(o2 *options) {
		if o == nil {
			o2.invalidf("WithObserver(nil)")
			return
		}
		o2.observing = o2.observing.with(func(ob *observing) { ob.list = append(ob.list, o) })
	})
}

// WithServerName names the server for the observers: every CallInfo's and
// event's Server carries it as Name (otelmcp's attribute
// resilientmcp.server.name), to tell apart the servers of an agent that
// has several (package fleet sets it to the server's name in the config).
// Default "".
func WithServerName(name string) Option {
	return optionFunc(func(o *options) {
		o.observing = o.observing.with(func(ob *observing) { ob.serverName = name })
	})
}

// observing is what the observers are told, given by options: kept behind
// a pointer, so that a client without observers does not carry it.
type observing struct {
	list       []Observer
	serverName string
}

// with is a copy of ob (or a new one) changed by f: options are applied to
// a fresh options on each New, and never share what they change.
func (ob *observing) with(f func(*observing)) *observing {
	out := &observing{}
	if ob != nil {
		*out = *ob
		out.list = append([]Observer(nil), ob.list...)
	}
	f(out)
	return out
}

// The observer's vocabulary lives in package observe, as grpc-go's stats
// package holds its stats.Handler's, so that an observer (otelmcp's) need
// not import the client. These aliases keep code written against client's
// names compiling unchanged; their docs are observe's.
type (
	Observer       = observe.Observer
	MetaPropagator = observe.MetaPropagator
	CallInfo       = observe.CallInfo
	Server         = observe.Server
	AttemptInfo    = observe.AttemptInfo
	AttemptReason  = observe.AttemptReason
	WaitKind       = observe.WaitKind
	AttemptEnd     = observe.AttemptEnd
	CallEnd        = observe.CallEnd

	Event          = observe.Event
	SessionOpened  = observe.SessionOpened
	OpenReason     = observe.OpenReason
	SessionLost    = observe.SessionLost
	LossReason     = observe.LossReason
	SessionClosed  = observe.SessionClosed
	SessionState   = observe.SessionState
	Probed         = observe.Probed
	DialFailed     = observe.DialFailed
	TokenRenewed   = observe.TokenRenewed
	BreakerState   = observe.BreakerState
	ProcessStarted = observe.ProcessStarted
	ProcessExited  = observe.ProcessExited
	ProcessExit    = observe.ProcessExit
)

// The reasons and waits of observe, under client's names.
const (
	AttemptFirst          = observe.AttemptFirst
	AttemptNotSent        = observe.AttemptNotSent
	AttemptOutcomeUnknown = observe.AttemptOutcomeUnknown
	AttemptSessionExpired = observe.AttemptSessionExpired
	AttemptUnauthorized   = observe.AttemptUnauthorized

	WaitNone         = observe.WaitNone
	WaitReinitialize = observe.WaitReinitialize
	WaitRedial       = observe.WaitRedial

	OpenFirst        = observe.OpenFirst
	OpenReinitialize = observe.OpenReinitialize
	OpenRedial       = observe.OpenRedial
	OpenRequested    = observe.OpenRequested
	OpenKept         = observe.OpenKept

	LossExpired     = observe.LossExpired
	LossUnreachable = observe.LossUnreachable
	LossUnhealthy   = observe.LossUnhealthy
	LossCorrupt     = observe.LossCorrupt
	LossRequested   = observe.LossRequested
)
