package observers

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/health"
)

// Config is what the observers are told, given by options (WithObserver,
// WithServerName): kept behind a pointer, so that a client without
// observers does not carry it.
type Config struct {
	List       []observe.Observer
	ServerName string
}

// With is a copy of cfg (or a new one) changed by f: options are applied to
// a fresh options on each New, and never share what they change.
func (cfg *Config) With(f func(*Config)) *Config {
	out := &Config{}
	if cfg != nil {
		*out = *cfg
		out.List = append([]observe.Observer(nil), cfg.List...)
	}
	f(out)
	return out
}

// Set is the fan-out to the WithObserver observers. The client holds nil
// when there are none, and every hook below is a method that returns at
// once on a nil receiver: the call path then allocates nothing and calls
// no interface for observation. Each hook into the call path is one line
// taking plain values, so that the path can change around it.
//
// A Set is immutable once New has made it (and Share given it the
// client's deadlines), and safe for concurrent use.
type Set struct {
	list   []observe.Observer
	meta   []observe.MetaPropagator // those of list that carry context in _meta
	server observe.Server           // the endpoint, as every CallInfo and event has it
	// deadlines are the client's, for calls made with a bare context: see
	// start.
	deadlines func() context.Context
	// class is the class of the client's own errors in a call's error
	// (CallEnd.ErrorType: "outcome_unknown", "closed"...), "" for none.
	class func(error) string
}

// New is the fan-out to cfg's observers for the server at endpoint (of
// scheme "stdio" for a process), nil if there are none. class tells the
// class of the client's own errors in a call's error, as CallEnd.ErrorType
// names them, "" if there is none.
func New(cfg *Config, endpoint *url.URL, class func(error) string) *Set {
	if cfg == nil || len(cfg.List) == 0 {
		return nil
	}
	list := cfg.List
	o := &Set{list: list, class: class, server: observe.Server{Name: cfg.ServerName, Address: endpoint.Hostname(), Transport: "tcp"}}
	o.server.Port, _ = strconv.Atoi(endpoint.Port())
	switch {
	case endpoint.Scheme == "stdio":
		o.server.Transport, o.server.Port = "pipe", 0
	case o.server.Port != 0:
	case endpoint.Scheme == "https":
		o.server.Port = 443
	default:
		o.server.Port = 80
	}
	for _, ob := range list {
		if mp, ok := ob.(observe.MetaPropagator); ok {
			o.meta = append(o.meta, mp)
		}
	}
	return o
}

// Share sets the client's shared deadlines (a context with the call
// timeout's deadline), once the client has made them.
func (o *Set) Share(deadlines func() context.Context) {
	if o != nil {
		o.deadlines = deadlines
	}
}

func (o *Set) event(ev observe.Event) {
	for _, ob := range o.list {
		ob.HandleEvent(o.server, ev)
	}
}

// Outside calls.

// Session is one of the client's sessions, as its observers are told of
// it: its Mcp-Session-Id, the protocol revision it negotiated, and where
// why it was taken out of service is kept for its SessionClosed.
type Session interface {
	Observed() (id, version string, lost *Lost)
}

// Lost keeps why a session was taken out of service, for the observers'
// SessionClosed. The zero Lost is a session not lost. It is safe for
// concurrent use.
type Lost struct{ p atomic.Pointer[loss] }

type loss struct {
	kind policy.Loss
	err  error
}

// lossCause is the client's error for a session taken out of service: why
// (the kind of loss), and the failure.
type lossCause interface {
	Loss() (policy.Loss, error)
}

// SessionOpened tells the observers that s goes into service, for reason
// (OpenKept: s itself, back in service after an outage).
func (o *Set) SessionOpened(s Session, reason observe.OpenReason) {
	if o == nil {
		return
	}
	id, version, lost := s.Observed()
	if reason == observe.OpenKept {
		lost.p.Store(nil)
	}
	o.event(observe.SessionOpened{Session: id, ProtocolVersion: version, Reason: reason})
}

// LostInHandshake tells the observers of a session the server opened (id,
// of version) that expired before the handshake was over (F39): it was
// opened, lost as expired because of err, and closed, all at once.
func (o *Set) LostInHandshake(id, version string, err error, reason observe.OpenReason) {
	if o == nil {
		return
	}
	o.event(observe.SessionOpened{Session: id, ProtocolVersion: version, Reason: reason})
	o.event(observe.SessionLost{Session: id, Reason: observe.LossExpired, Cause: err})
	o.event(observe.SessionClosed{Session: id, ProtocolVersion: version, Lost: observe.LossExpired, Cause: err})
}

// SessionLost tells the observers that s was taken out of service because
// of cause, and remembers why for its SessionClosed.
func (o *Set) SessionLost(s Session, cause error) {
	if o == nil {
		return
	}
	l := &loss{kind: policy.LossUnhealthy, err: cause}
	var lc lossCause
	if errors.As(cause, &lc) {
		l.kind, l.err = lc.Loss()
	}
	id, _, lost := s.Observed()
	lost.p.Store(l)
	o.event(observe.SessionLost{Session: id, Reason: LossReason(l.kind), Cause: l.err})
}

// SessionClosed tells the observers that s, opened at opened, was closed.
func (o *Set) SessionClosed(s Session, opened time.Time) {
	if o == nil {
		return
	}
	id, version, lost := s.Observed()
	ev := observe.SessionClosed{Session: id, ProtocolVersion: version, Duration: time.Since(opened)}
	if l := lost.p.Load(); l != nil {
		ev.Lost, ev.Cause = LossReason(l.kind), l.err
	}
	o.event(ev)
}

// LossReason is the observers' word for a loss of kind k.
func LossReason(k policy.Loss) observe.LossReason {
	switch k {
	case policy.LossExpired:
		return observe.LossExpired
	case policy.LossUnreachable:
		return observe.LossUnreachable
	case policy.LossCorrupt:
		return observe.LossCorrupt
	case policy.LossRequested:
		return observe.LossRequested
	}
	return observe.LossUnhealthy
}

// Probed tells the observers of a probe of s that answered, or failed with
// err.
func (o *Set) Probed(s Session, err error) {
	if o == nil {
		return
	}
	id, _, _ := s.Observed()
	o.event(observe.Probed{Session: id, Err: err, Busy: errors.As(err, new(*health.BusyError))})
}

// DialFailed tells the observers that opening a session failed.
func (o *Set) DialFailed(err error, retryIn time.Duration) {
	if o == nil {
		return
	}
	o.event(observe.DialFailed{Err: err, RetryIn: retryIn})
}

// RenewalHook is the OAuth token layer's hook (auth.Env.OnRenewal); nil
// without observers.
func (o *Set) RenewalHook() func(refresh bool, err error) {
	if o == nil {
		return nil
	}
	return func(refresh bool, err error) {
		o.event(observe.TokenRenewed{Refresh: refresh, Err: err, ErrorType: auth.ReasonOf(err)})
	}
}

// BreakerChanged delivers the circuit breaker's opening or closing, on the
// client's state notifier's goroutine.
func (o *Set) BreakerChanged(b observe.BreakerState) {
	if o != nil {
		o.event(b)
	}
}

// MemberChanged delivers a pool member's change of state, on the client's
// state notifier's goroutine (which tells only when there are observers).
func (o *Set) MemberChanged(from, to observe.State) {
	o.event(observe.SessionState{From: from, To: to})
}

// Process tells the observers of a stdio server's process
// (ProcessStarted, ProcessExited).
func (o *Set) Process(ev observe.Event) {
	if o != nil {
		o.event(ev)
	}
}
