package client

import (
	"errors"

	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/transitions"
	"github.com/resilientmcp/resilientmcp/client/observe"
)

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
		o2.observing = o2.observing.With(func(ob *observers.Config) { ob.List = append(ob.List, o) })
	})
}

// WithServerName names the server for the observers: every
// observe.CallInfo's and event's Server carries it as Name (otelmcp's
// attribute resilientmcp.server.name), to tell apart the servers of an
// agent that has several (package fleet sets it to the server's name in the config).
// Default "".
func WithServerName(name string) Option {
	return optionFunc(func(o *options) {
		o.observing = o.observing.With(func(ob *observers.Config) { ob.ServerName = name })
	})
}

// The observers and the client's books are client/internal/observers
// (Set, Trace, Counters); what they need of the client is here.

// errorClass is the class of the client's own errors in err, as
// CallEnd.ErrorType names them ("" if none): for the observers and the
// counters, which do not know the client's errors.
func errorClass(err error) string {
	switch {
	case errors.Is(err, ErrOutcomeUnknown):
		return observers.ClassOutcomeUnknown
	case errors.Is(err, ErrUnavailable):
		return observers.ClassUnavailable
	case errors.Is(err, ErrAuthorizationRequired):
		return observers.ClassAuthorizationRequired
	case errors.As(err, new(*InsufficientScopeError)):
		return observers.ClassInsufficientScope
	case errors.Is(err, ErrClosed):
		return observers.ClassClosed
	}
	return ""
}

// Observed is what the observers are told of s (observers.Session).
func (s *session) Observed() (id, version string, lost *observers.Lost) {
	return s.mc.GetSessionId(), s.version, &s.loss
}

// Loss is why the session was lost, for the observers.
func (e *lostError) Loss() (policy.Loss, error) { return e.kind, e.err }

// openReason is why a new session is opened in place of prev (nil for a
// member's first), lost with lost (nil if it was not).
func openReason(prev *session, lost *lostError) observe.OpenReason {
	switch {
	case prev == nil || lost == nil:
		return observe.OpenFirst
	case lost.kind == policy.LossRequested:
		return observe.OpenRequested
	case lost.kind.Reinitializes():
		return observe.OpenReinitialize
	}
	return observe.OpenRedial
}

// noteMember tells the observers, in order and from the state notifier's
// goroutine (this runs under the client's locks), that a pool member's
// state is now st.
func (c *ResilientClient) noteMember(m *memberState, st State) {
	if c.obs == nil {
		return
	}
	if from := State(m.observed.Swap(int32(st))); from != st {
		c.sess.notifier.Push(transitions.Event{From: from, To: st, Member: true})
	}
}

// Observer is told of every call the client makes and of what it does on
// its own (WithObserver): observe.Observer. The observer's vocabulary
// (CallInfo, the events, the reasons) lives in package observe, as grpc-go's
// stats package holds its stats.Handler's, so that an observer (otelmcp's)
// need not import the client; Observer stays here, a name of the client's
// API (the design's api.md).
type Observer = observe.Observer
