// Package otelmcp records OpenTelemetry traces and metrics of a
// ResilientClient by MCP's semantic conventions (OpenTelemetry's
// gen-ai/mcp.md), and of what the conventions have no names for: the
// resilience itself. It is an observe.Observer, given to a client with
// client.WithObserver:
//
//	c, err := client.New(url, client.WithObserver(otelmcp.NewObserver()))
//
// # Traces
//
// Each call is one CLIENT span named "{mcp.method.name} {target}"
// ("tools/call get-weather"; the target is the tool or the prompt, none for
// other methods), with mcp.method.name, gen_ai.tool.name,
// gen_ai.prompt.name, mcp.resource.uri, gen_ai.operation.name
// ("execute_tool" for tools/call), jsonrpc.request.id (of the attempt that
// answered, when the trace context was carried in _meta), mcp.session.id
// (session era), mcp.protocol.version, server.address, server.port,
// network.transport, network.protocol.name and network.protocol.version,
// and resilientmcp.call.attempts. A failed call has error.type (the
// JSON-RPC error code, "tool_error" for a tools/call result with isError,
// else the library's class: "outcome_unknown", "unavailable",
// "authorization_required", "insufficient_scope", "closed"; for the
// server's answer returned as is, its attempt's, such as "server_error";
// "_OTHER" for none of those; see observe.CallEnd) and status Error, with rpc.response.status_code for a
// JSON-RPC error.
//
// Under the call's span, each attempt to send it is an INTERNAL span named
// "attempt", with resilientmcp.attempt.number, resilientmcp.attempt.reason
// (first, not_sent, outcome_unknown, session_expired, unauthorized: what
// the attempt before met), mcp.session.id, mcp.protocol.version,
// jsonrpc.request.id, and error.type and status Error if it failed. The
// HTTP spans of an instrumented http.Client (otelhttp, given to
// client.WithHTTPClient) nest under their attempt. Before an attempt that
// waited for a new session, an INTERNAL span named "reinitialize" or
// "redial" covers the wait. A call resent after a server restart expired
// its session:
//
//	tools/call echo              CLIENT  resilientmcp.call.attempts=2
//	├── attempt                  number=1 reason=first            error.type=session_expired
//	│   └── HTTP POST            404
//	├── reinitialize             the call waited for the new session
//	└── attempt                  number=2 reason=session_expired
//	    └── HTTP POST            200
//
// The trace context of each attempt (traceparent, tracestate, baggage, by
// the propagators) travels in params._meta of every request and
// notification it sends (SEP-414), so that the server's spans join the
// caller's trace.
//
// # Metrics
//
// By the conventions: mcp.client.operation.duration (per call, retries
// included) and mcp.client.session.duration, histograms in seconds with the
// conventions' buckets and attributes. The library's own, each with
// server.address and server.port:
//
//   - resilientmcp.client.attempts: every send, by mcp.method.name and
//     resilientmcp.attempt.reason;
//   - resilientmcp.client.reinitializations, resilientmcp.client.redials:
//     sessions opened because the last one expired, or because it was lost
//     otherwise (its connection broke or hung, it failed its probes, it
//     answered another request);
//   - resilientmcp.client.dial.failures: failed attempts to open a session;
//   - resilientmcp.client.process.restarts: a stdio server's processes
//     started again after a member's first (client.NewStdio): after a
//     crash, a hang or a closed stdout;
//   - resilientmcp.client.probe.failures: failed probes, keepalive or
//     before a call (a busy answer is not a failure);
//   - resilientmcp.client.token.refreshes, resilientmcp.client.authorizations:
//     the OAuth token layer's renewals, with error.type when they failed;
//   - resilientmcp.client.replays.refused: calls whose outcome was unknown
//     and that were not sent again (not safe to repeat), by mcp.method.name
//     and gen_ai.tool.name;
//   - resilientmcp.client.answers.refused: answers the client refused, by
//     resilientmcp.answer.refusal ("wrong_id": another request's;
//     "too_large": over WithMaxResponseBytes);
//   - resilientmcp.client.sessions: an up-down counter of the pool's
//     sessions by resilientmcp.session.state (Connecting, Ready, Degraded,
//     Reconnecting);
//   - resilientmcp.client.failing_fast: an up-down counter of the clients
//     whose circuit breaker (client.WithFailFastAfter) is open, and
//     resilientmcp.client.breaker.trips, how many times it opened.
//
// Given OpenTelemetry's no-op providers (trace/noop, metric/noop) the
// observer asks them nothing and costs a call within 2.5 %; on the global
// providers with no SDK installed, about 2.5 % (it cannot know that none
// will be installed later); with the SDK recording everything, about
// 47 µs of a loopback call (BENCHMARKS.md).
package otelmcp

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/resilientmcp/resilientmcp/client/observe"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/resilientmcp/resilientmcp/otelmcp"

// The library's own attribute keys.
const (
	AttemptNumberKey = attribute.Key("resilientmcp.attempt.number")
	AttemptReasonKey = attribute.Key("resilientmcp.attempt.reason")
	CallAttemptsKey  = attribute.Key("resilientmcp.call.attempts")
	AnswerRefusalKey = attribute.Key("resilientmcp.answer.refusal")
	SessionStateKey  = attribute.Key("resilientmcp.session.state")
	// CacheKey marks a call answered from the client's cache of listings
	// and reads: "hit" within the server's ttlMs (nothing was sent),
	// "stale" in place of the error its attempts met (client.WithMaxStale).
	CacheKey = attribute.Key("resilientmcp.cache")
	// ServerNameKey is the server's name in the agent's config
	// (client.WithServerName, set by package fleet), on every span and
	// metric point of a client given one.
	ServerNameKey = attribute.Key("resilientmcp.server.name")
)

// An Option configures NewObserver. Options are immutable values.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	prop propagation.TextMapPropagator
}

// WithTracerProvider is where spans go. Default otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithMeterProvider is where metrics go. Default otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.mp = mp })
}

// WithPropagators is how the trace context goes into params._meta.
// Default otel.GetTextMapPropagator().
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.prop = p })
}

// durationBuckets are the conventions' bucket boundaries for both
// histograms, in seconds.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// NewObserver returns an observer that records traces and metrics of every
// client it is given to (client.WithObserver); one may serve any number of
// clients. It also carries the trace context in each request's
// params._meta (it is an observe.MetaPropagator), unless its TracerProvider
// is OpenTelemetry's no-op one (trace/noop): nothing is traced then, and
// nothing carried. It is safe for concurrent use.
func NewObserver(opts ...Option) observe.Observer {
	var c config
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.prop == nil {
		c.prop = otel.GetTextMapPropagator()
	}
	o := &observer{
		tracer:  c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:    c.prop,
		client:  []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
		tracing: !isNoop(c.tp),
		metered: !isNoop(c.mp),
	}
	m := c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	// An instrument that cannot be made is a no-op one (the API returns
	// one with the error); the error goes to OpenTelemetry's handler.
	var err error
	handle := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	var e error
	o.operation, e = mcpconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(e)
	o.session, e = mcpconv.NewClientSessionDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(e)
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, e := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		handle(e)
		return c
	}
	o.attempts = counter("resilientmcp.client.attempts", "{attempt}", "Attempts to send a call: the first, and every send after a failure.")
	o.reinitializations = counter("resilientmcp.client.reinitializations", "{session}", "Sessions opened because the last one expired.")
	o.redials = counter("resilientmcp.client.redials", "{session}", "Sessions opened because the last one's connection died or it answered another request.")
	o.dialFailures = counter("resilientmcp.client.dial.failures", "{attempt}", "Failed attempts to open a session.")
	o.probeFailures = counter("resilientmcp.client.probe.failures", "{probe}", "Probes that failed, keepalive or before a call.")
	o.refreshes = counter("resilientmcp.client.token.refreshes", "{refresh}", "OAuth token refreshes sent to the authorization server.")
	o.authorizations = counter("resilientmcp.client.authorizations", "{authorization}", "OAuth authorizations (user or client credentials).")
	o.refusedReplays = counter("resilientmcp.client.replays.refused", "{call}", "Calls that may have run and were not sent again: not safe to repeat.")
	o.refusedAnswers = counter("resilientmcp.client.answers.refused", "{answer}", "Answers refused: another request's, or over the size limit.")
	o.sessions, e = m.Int64UpDownCounter("resilientmcp.client.sessions", metric.WithUnit("{session}"), metric.WithDescription("The pool's sessions, by state."))
	handle(e)
	o.failingFast, e = m.Int64UpDownCounter("resilientmcp.client.failing_fast", metric.WithUnit("{client}"),
		metric.WithDescription("Clients whose circuit breaker is open: the server has been unreachable too long, and calls fail at once."))
	handle(e)
	o.breakerTrips = counter("resilientmcp.client.breaker.trips", "{trip}", "Times the circuit breaker opened.")
	o.processRestarts = counter("resilientmcp.client.process.restarts", "{process}", "Stdio server processes started again after a member's first (a crash, a hang, a closed stdout).")
	if err != nil {
		otel.Handle(err)
	}
	if !o.tracing {
		// Nothing traced, nothing to carry in _meta: an observer that is
		// not a MetaPropagator spares every request the client's layer
		// that asks.
		return untraced{o}
	}
	return o
}

// untraced is the observer of a no-op TracerProvider: the same, without
// InjectMeta.
type untraced struct{ o *observer }

func (u untraced) StartCall(ctx context.Context, info observe.CallInfo) context.Context {
	return u.o.StartCall(ctx, info)
}

func (u untraced) StartAttempt(ctx context.Context, info observe.AttemptInfo) context.Context {
	return u.o.StartAttempt(ctx, info)
}

func (u untraced) EndAttempt(ctx context.Context, end observe.AttemptEnd) { u.o.EndAttempt(ctx, end) }
func (u untraced) EndCall(ctx context.Context, end observe.CallEnd)       { u.o.EndCall(ctx, end) }
func (u untraced) HandleEvent(server observe.Server, ev observe.Event)    { u.o.HandleEvent(server, ev) }

// isNoop reports whether p is one of OpenTelemetry's no-op providers.
func isNoop(p any) bool {
	switch p.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider, metricnoop.MeterProvider, *metricnoop.MeterProvider:
		return true
	}
	return false
}

// observer is NewObserver's: immutable once made.
type observer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	client []trace.SpanStartOption // a call span's, made once rather than per call
	// tracing and metered are false for OpenTelemetry's no-op providers,
	// which are then not asked anything: even a no-op span costs a
	// context and two allocations, and code that runs once per call runs
	// from cold caches (BENCHMARKS.md). The global providers, no-op until
	// an SDK is installed, are asked: they may get one at any time.
	tracing, metered bool

	operation mcpconv.ClientOperationDuration
	session   mcpconv.ClientSessionDuration

	attempts, reinitializations, redials, dialFailures, probeFailures       metric.Int64Counter
	refreshes, authorizations, refusedReplays, refusedAnswers, breakerTrips metric.Int64Counter
	sessions, failingFast                                                   metric.Int64UpDownCounter
	processRestarts                                                         metric.Int64Counter
}

var _ observe.MetaPropagator = (*observer)(nil)

// call is one call's state, and the context it runs under: it answers for
// callKey itself, without a second allocation. Its fields are written by
// the call's goroutine only, attempt by attempt.
type call struct {
	context.Context
	span  trace.Span
	start time.Time
	info  observe.CallInfo
	// From the attempts, for the call's span and metric.
	session, protocol, requestID, network string
}

// stateKey finds the state of the call, or of the attempt, a context
// belongs to: one key, so that each method finds it in one walk up the
// context.
type stateKey struct{}

func (c *call) Value(key any) any {
	if key == (stateKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// callOf is the call ctx belongs to, and its attempt if it is an
// attempt's context; nil if the call is not followed.
func callOf(ctx context.Context) (*call, *attempt) {
	switch s := ctx.Value(stateKey{}).(type) {
	case *call:
		return s, nil
	case *attempt:
		return s.call, s
	}
	return nil, nil
}

// attempt is one attempt's state and context, as call is.
type attempt struct {
	context.Context
	span trace.Span
	call *call
}

func (a *attempt) Value(key any) any {
	if key == (stateKey{}) {
		return a
	}
	return a.Context.Value(key)
}

// StartCall starts the call's CLIENT span.
func (o *observer) StartCall(ctx context.Context, info observe.CallInfo) context.Context {
	if !o.tracing && !o.metered {
		return ctx
	}
	start := time.Now()
	span := trace.SpanFromContext(context.Background()) // a no-op one, not allocated
	if o.tracing {
		name := info.Method
		if target := targetOf(info); target != "" {
			name += " " + target
		}
		ctx, span = o.tracer.Start(ctx, name, o.client...)
	}
	if !span.SpanContext().IsValid() && !o.metering(ctx) {
		// A no-op tracer (an SDK gives every span a valid context, sampled
		// or not) and no metrics: nothing to follow the call for.
		return ctx
	}
	if span.IsRecording() {
		span.SetAttributes(callAttributes(info)...)
	}
	return &call{Context: ctx, span: span, start: start, info: info}
}

// metering reports whether any instrument a call records to is enabled.
func (o *observer) metering(ctx context.Context) bool {
	return o.metered && (o.operation.Enabled(ctx) || o.attempts.Enabled(ctx) || o.refusedAnswers.Enabled(ctx) || o.refusedReplays.Enabled(ctx))
}

// tracing reports whether the call's attempts get spans: not under a
// no-op tracer.
func (c *call) tracing() bool { return c.span.SpanContext().IsValid() }

func targetOf(info observe.CallInfo) string {
	if info.Tool != "" {
		return info.Tool
	}
	return info.Prompt
}

// appendServer is where the server is, as the conventions say it: over
// HTTP its address, port, network.transport tcp and
// network.protocol.name http; over stdio (network.transport pipe) the
// command, with no port and no HTTP.
func appendServer(attrs []attribute.KeyValue, s observe.Server) []attribute.KeyValue {
	if s.Name != "" {
		attrs = append(attrs, ServerNameKey.String(s.Name))
	}
	if s.Transport == "pipe" {
		return append(attrs, semconv.ServerAddressKey.String(s.Address), semconv.NetworkTransportPipe)
	}
	return append(attrs,
		semconv.ServerAddressKey.String(s.Address),
		semconv.ServerPortKey.Int(s.Port),
		semconv.NetworkTransportTCP,
		semconv.NetworkProtocolNameKey.String("http"),
	)
}

func callAttributes(info observe.CallInfo) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs,
		semconv.McpMethodNameKey.String(info.Method),
	)
	attrs = appendServer(attrs, info.Server)
	if info.Tool != "" {
		attrs = append(attrs, semconv.GenAIToolNameKey.String(info.Tool), semconv.GenAIOperationNameExecuteTool)
	}
	if info.Prompt != "" {
		attrs = append(attrs, semconv.GenAIPromptNameKey.String(info.Prompt))
	}
	if info.ResourceURI != "" {
		attrs = append(attrs, semconv.McpResourceURIKey.String(info.ResourceURI))
	}
	return attrs
}

// StartAttempt starts the attempt's span under the call's, after a span of
// the wait for a new session if the call waited for one.
func (o *observer) StartAttempt(ctx context.Context, info observe.AttemptInfo) context.Context {
	if !o.tracing && !o.metered {
		return ctx
	}
	c, _ := callOf(ctx)
	if c == nil {
		return ctx
	}
	c.session, c.protocol, c.requestID = info.Session, info.ProtocolVersion, ""
	if o.metered && o.attempts.Enabled(ctx) {
		o.attempts.Add(ctx, 1, metric.WithAttributes(
			semconv.McpMethodNameKey.String(c.info.Method),
			AttemptReasonKey.String(info.Reason.String()),
			semconv.ServerAddressKey.String(c.info.Server.Address),
			semconv.ServerPortKey.Int(c.info.Server.Port),
		))
	}
	if !c.tracing() {
		return ctx
	}
	// A resend after a 401 starts from the context of the attempt it
	// replaces: its parent is the call, not that attempt.
	parent := ctx
	if trace.SpanContextFromContext(ctx).SpanID() != c.span.SpanContext().SpanID() {
		parent = trace.ContextWithSpan(ctx, c.span)
	}
	if info.Waited != observe.WaitNone && c.span.IsRecording() {
		_, wait := o.tracer.Start(parent, info.Waited.String(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(info.WaitStart))
		wait.End()
	}
	ctx, span := o.tracer.Start(parent, "attempt", trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(
			AttemptNumberKey.Int(info.Number),
			AttemptReasonKey.String(info.Reason.String()),
			semconv.McpProtocolVersionKey.String(info.ProtocolVersion),
		)
		if info.Session != "" {
			span.SetAttributes(semconv.McpSessionIDKey.String(info.Session))
		}
	}
	return &attempt{Context: ctx, span: span, call: c}
}

// EndAttempt ends the attempt's span.
func (o *observer) EndAttempt(ctx context.Context, end observe.AttemptEnd) {
	if !o.tracing && !o.metered {
		return
	}
	c, a := callOf(ctx)
	if c == nil {
		return
	}
	c.requestID, c.network = end.RequestID, end.NetworkProtocolVersion
	if a != nil && a.span.IsRecording() {
		if end.RequestID != "" {
			a.span.SetAttributes(semconv.JSONRPCRequestIDKey.String(end.RequestID))
		}
		if end.Err != nil {
			a.span.SetAttributes(semconv.ErrorTypeKey.String(end.ErrorType))
			a.span.SetStatus(codes.Error, end.Err.Error())
		}
	}
	if a != nil {
		a.span.End()
	}
	refusal := ""
	switch end.ErrorType {
	case "wrong_answer":
		refusal = "wrong_id"
	case "response_too_large":
		refusal = "too_large"
	}
	if refusal != "" && o.metered && o.refusedAnswers.Enabled(ctx) {
		o.refusedAnswers.Add(ctx, 1, metric.WithAttributes(AnswerRefusalKey.String(refusal),
			semconv.ServerAddressKey.String(c.info.Server.Address), semconv.ServerPortKey.Int(c.info.Server.Port)))
	}
}

// EndCall ends the call's span and records its duration.
func (o *observer) EndCall(ctx context.Context, end observe.CallEnd) {
	if !o.tracing && !o.metered {
		return
	}
	c, _ := callOf(ctx)
	if c == nil {
		return
	}
	elapsed := time.Since(c.start)
	if c.span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, CallAttemptsKey.Int(end.Attempts))
		switch {
		case end.Stale:
			attrs = append(attrs, CacheKey.String("stale"))
		case end.FromCache:
			attrs = append(attrs, CacheKey.String("hit"))
		}
		if c.protocol != "" {
			attrs = append(attrs, semconv.McpProtocolVersionKey.String(c.protocol))
		}
		if c.session != "" {
			attrs = append(attrs, semconv.McpSessionIDKey.String(c.session))
		}
		if c.requestID != "" {
			attrs = append(attrs, semconv.JSONRPCRequestIDKey.String(c.requestID))
		}
		if c.network != "" {
			attrs = append(attrs, semconv.NetworkProtocolVersionKey.String(c.network))
		}
		if end.ErrorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(end.ErrorType))
			desc := end.ErrorType
			if end.Err != nil {
				desc = end.Err.Error()
			}
			c.span.SetStatus(codes.Error, desc)
		}
		if end.RPCCode != 0 {
			attrs = append(attrs, semconv.RPCResponseStatusCodeKey.String(strconv.Itoa(end.RPCCode)))
		}
		c.span.SetAttributes(attrs...)
	}
	c.span.End()
	if o.metered && o.operation.Enabled(ctx) {
		attrs := make([]attribute.KeyValue, 0, 12)
		attrs = appendServer(attrs, c.info.Server)
		if c.info.Tool != "" {
			attrs = append(attrs, semconv.GenAIToolNameKey.String(c.info.Tool), semconv.GenAIOperationNameExecuteTool)
		}
		if c.info.Prompt != "" {
			attrs = append(attrs, semconv.GenAIPromptNameKey.String(c.info.Prompt))
		}
		if c.protocol != "" {
			attrs = append(attrs, semconv.McpProtocolVersionKey.String(c.protocol))
		}
		if c.network != "" {
			attrs = append(attrs, semconv.NetworkProtocolVersionKey.String(c.network))
		}
		if end.ErrorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(end.ErrorType))
		}
		if end.RPCCode != 0 {
			attrs = append(attrs, semconv.RPCResponseStatusCodeKey.String(strconv.Itoa(end.RPCCode)))
		}
		o.operation.Record(ctx, elapsed.Seconds(), mcpconv.MethodNameAttr(c.info.Method), attrs...)
	}
	if end.ReplayRefused && o.metered && o.refusedReplays.Enabled(ctx) {
		attrs := []attribute.KeyValue{
			semconv.McpMethodNameKey.String(c.info.Method),
			semconv.ServerAddressKey.String(c.info.Server.Address),
			semconv.ServerPortKey.Int(c.info.Server.Port),
		}
		if c.info.Tool != "" {
			attrs = append(attrs, semconv.GenAIToolNameKey.String(c.info.Tool))
		}
		o.refusedReplays.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
}

// InjectMeta is the attempt's trace context and baggage, by the
// propagators, for the request's _meta: nil, without asking them, when
// ctx has neither a valid span context nor baggage (no SDK is installed),
// so that a program that traces nothing pays no map per request.
func (o *observer) InjectMeta(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return nil
	}
	meta := make(map[string]string, 3)
	o.prop.Inject(ctx, propagation.MapCarrier(meta))
	return meta
}

// HandleEvent counts what happens outside calls, and records the duration
// of every session that ends.
func (o *observer) HandleEvent(server observe.Server, ev observe.Event) {
	ctx := context.Background()
	where := metric.WithAttributes(semconv.ServerAddressKey.String(server.Address), semconv.ServerPortKey.Int(server.Port))
	switch ev := ev.(type) {
	case observe.SessionOpened:
		switch ev.Reason {
		case observe.OpenReinitialize:
			o.reinitializations.Add(ctx, 1, where)
		case observe.OpenRedial:
			o.redials.Add(ctx, 1, where)
		}
	case observe.SessionClosed:
		if !o.session.Enabled(ctx) {
			return
		}
		attrs := appendServer(make([]attribute.KeyValue, 0, 6), server)
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(ev.ProtocolVersion))
		if ev.Cause != nil && ev.Lost != observe.LossRequested {
			attrs = append(attrs, semconv.ErrorTypeKey.String(ev.Lost.String()))
		}
		o.session.Record(ctx, ev.Duration.Seconds(), attrs...)
	case observe.SessionState:
		if counted(ev.From) {
			o.sessions.Add(ctx, -1, metric.WithAttributes(SessionStateKey.String(ev.From.String()),
				semconv.ServerAddressKey.String(server.Address), semconv.ServerPortKey.Int(server.Port)))
		}
		if counted(ev.To) {
			o.sessions.Add(ctx, 1, metric.WithAttributes(SessionStateKey.String(ev.To.String()),
				semconv.ServerAddressKey.String(server.Address), semconv.ServerPortKey.Int(server.Port)))
		}
	case observe.Probed:
		if ev.Err != nil && !ev.Busy {
			o.probeFailures.Add(ctx, 1, where)
		}
	case observe.DialFailed:
		o.dialFailures.Add(ctx, 1, where)
	case observe.ProcessStarted:
		if ev.Restart {
			o.processRestarts.Add(ctx, 1, where)
		}
	case observe.BreakerState:
		if ev.Open {
			o.breakerTrips.Add(ctx, 1, where)
			o.failingFast.Add(ctx, 1, where)
		} else {
			o.failingFast.Add(ctx, -1, where)
		}
	case observe.TokenRenewed:
		counter := o.authorizations
		if ev.Refresh {
			counter = o.refreshes
		}
		if ev.Err == nil {
			counter.Add(ctx, 1, where)
			return
		}
		counter.Add(ctx, 1, metric.WithAttributes(semconv.ServerAddressKey.String(server.Address),
			semconv.ServerPortKey.Int(server.Port), semconv.ErrorTypeKey.String(ev.ErrorType)))
	}
}

// counted reports whether the sessions counter counts a session in state
// s: Idle is a slot with no session, Closed one that is gone.
func counted(s observe.State) bool { return s != observe.Idle && s != observe.Closed }
