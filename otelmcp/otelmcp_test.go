package otelmcp_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/internal/hostile"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/otelmcp"
)

// newClient is a client of url observed by tm, closed with the test.
func newClient(t *testing.T, tm *telemetry, url string, opts ...client.Option) *client.ResilientClient {
	t.Helper()
	c, err := client.New(url, append(tm.options(), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func startServer(t *testing.T, cfg testserver.Config) *testserver.Server {
	t.Helper()
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// only is the one span of the slice, or fails the test.
func only(t *testing.T, what string, spans []sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	t.Helper()
	if len(spans) != 1 {
		t.Fatalf("%d spans %s, want 1", len(spans), what)
	}
	return spans[0]
}

// attemptsOf are the attempt spans under a call's span, and fails the test
// unless there are n, each with an HTTP span of the instrumented client
// under it.
func (tm *telemetry) attemptsOf(t *testing.T, call sdktrace.ReadOnlySpan, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var attempts []sdktrace.ReadOnlySpan
	for _, c := range tm.children(call) {
		if c.Name() == "attempt" {
			attempts = append(attempts, c)
		}
	}
	if len(attempts) != n {
		t.Fatalf("%d attempts under the call, want %d:\n%s", len(attempts), n, tm.tree(call))
	}
	for i, a := range attempts {
		wantAttrs(t, a, otelmcp.AttemptNumberKey.Int(i+1))
		if a.SpanKind() != trace.SpanKindInternal {
			t.Errorf("attempt %d is %s, want internal", i+1, a.SpanKind())
		}
		var http int
		for _, c := range tm.children(a) {
			if c.SpanKind() == trace.SpanKindClient {
				http++
			}
		}
		if http == 0 {
			t.Errorf("no HTTP span under attempt %d:\n%s", i+1, tm.tree(call))
		}
	}
	return attempts
}

// A server restart in the session era: one call span, two attempts under
// it (the first met the expired session, the second went out on the new
// one after the re-initialization it waited for), the HTTP spans of the
// instrumented client under each attempt, the attributes of the
// conventions, the server given the attempt's trace context in _meta, and
// the metrics that count it.
func TestRestartIsOneCallWithTwoAttempts(t *testing.T) {
	tm := newTelemetry(t)
	srv := startServer(t, testserver.Config{Era: testserver.SessionEra, RecordMeta: true})
	c := newClient(t, tm, srv.URL())
	ctx := testCtx(t)
	if _, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "a"})); err != nil {
		t.Fatal(err)
	}
	before := c.GetSessionId()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The pooled connection died with the server; closing it makes the
	// first attempt meet the 404, not the dead connection (that is
	// another test's fault).
	tm.tr.CloseIdleConnections()
	if _, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "b"})); err != nil {
		t.Fatal(err)
	}
	after := c.GetSessionId()

	calls := tm.callSpans("tools/call echo")
	if len(calls) != 2 {
		t.Fatalf("%d call spans, want 2", len(calls))
	}
	call := calls[1]
	t.Logf("\n%s", tm.tree(call))
	if call.SpanKind() != trace.SpanKindClient {
		t.Errorf("call span is %s, want client", call.SpanKind())
	}
	if call.Status().Code != codes.Unset {
		t.Errorf("call span status %v, want unset", call.Status())
	}
	port, _ := strconv.Atoi(srv.Addr()[len("127.0.0.1:"):])
	wantAttrs(t, call,
		semconv.McpMethodNameKey.String("tools/call"),
		semconv.GenAIToolNameKey.String("echo"),
		semconv.GenAIOperationNameKey.String("execute_tool"),
		semconv.ServerAddressKey.String("127.0.0.1"),
		semconv.ServerPortKey.Int(port),
		semconv.NetworkTransportKey.String("tcp"),
		semconv.NetworkProtocolNameKey.String("http"),
		semconv.NetworkProtocolVersionKey.String("1.1"),
		semconv.McpProtocolVersionKey.String(mcp.LATEST_LEGACY_PROTOCOL_VERSION),
		semconv.McpSessionIDKey.String(after),
		otelmcp.CallAttemptsKey.Int(2),
	)
	wantNoAttr(t, call, semconv.ErrorTypeKey)
	if _, ok := attr(call, semconv.JSONRPCRequestIDKey); !ok {
		t.Error("call span has no jsonrpc.request.id")
	}

	attempts := tm.attemptsOf(t, call, 2)
	wantAttrs(t, attempts[0],
		otelmcp.AttemptReasonKey.String("first"),
		semconv.McpSessionIDKey.String(before),
		semconv.ErrorTypeKey.String("session_expired"),
	)
	if attempts[0].Status().Code != codes.Error {
		t.Errorf("first attempt's status %v, want error", attempts[0].Status())
	}
	wantAttrs(t, attempts[1],
		otelmcp.AttemptReasonKey.String("session_expired"),
		semconv.McpSessionIDKey.String(after),
	)
	wantNoAttr(t, attempts[1], semconv.ErrorTypeKey)
	// The wait for the re-initialization, between the two.
	kids := tm.children(call)
	if len(kids) != 3 || kids[1].Name() != "reinitialize" {
		t.Errorf("under the call, want attempt, reinitialize, attempt:\n%s", tm.tree(call))
	} else if w := kids[1]; w.StartTime().Before(attempts[0].StartTime()) || w.EndTime().After(attempts[1].StartTime()) {
		t.Errorf("the wait [%v, %v] is not between the attempts", w.StartTime(), w.EndTime())
	}

	// The server was given each attempt's context: its spans would join
	// the caller's trace under the attempt that sent it.
	metas := srv.ReceivedMeta("tools/call")
	if len(metas) != 3 {
		t.Fatalf("the server received %d tools/call, want 3 (one before the restart, two attempts)", len(metas))
	}
	for i, a := range attempts {
		tid, parent := traceparentOf(t, metas[1+i])
		if tid != call.SpanContext().TraceID() || parent != a.SpanContext().SpanID() {
			t.Errorf("tools/call %d carried trace %s span %s, want the call's trace %s and attempt %d's span %s",
				i+1, tid, parent, call.SpanContext().TraceID(), i+1, a.SpanContext().SpanID())
		}
	}
	// Requests outside calls carry nothing: the re-initialization is the
	// client's, not the caller's.
	for _, m := range srv.ReceivedMeta("initialize") {
		if _, ok := m["traceparent"]; ok {
			t.Errorf("initialize carried a trace context: %v", m)
		}
	}

	where := []attribute.KeyValue{semconv.ServerAddressKey.String("127.0.0.1"), semconv.ServerPortKey.Int(port)}
	ops := tm.histogram("mcp.client.operation.duration", append(where, semconv.McpMethodNameKey.String("tools/call"), semconv.GenAIToolNameKey.String("echo"))...)
	var n uint64
	for _, p := range ops {
		n += p.Count
		if _, ok := p.Attributes.Value(semconv.ErrorTypeKey); ok {
			t.Errorf("a successful call recorded with error.type: %v", p.Attributes.ToSlice())
		}
		if len(p.Bounds) != 14 || p.Bounds[0] != 0.01 || p.Bounds[13] != 300 {
			t.Errorf("operation duration buckets %v, want the conventions'", p.Bounds)
		}
	}
	if n != 2 {
		t.Errorf("mcp.client.operation.duration counted %d tools/call, want 2", n)
	}
	if got := tm.count("resilientmcp.client.attempts", semconv.McpMethodNameKey.String("tools/call"), otelmcp.AttemptReasonKey.String("first")); got != 2 {
		t.Errorf("%d first attempts, want 2", got)
	}
	if got := tm.count("resilientmcp.client.attempts", semconv.McpMethodNameKey.String("tools/call"), otelmcp.AttemptReasonKey.String("session_expired")); got != 1 {
		t.Errorf("%d attempts after the session expired, want 1", got)
	}
	if got := tm.count("resilientmcp.client.reinitializations", where...); got != 1 {
		t.Errorf("%d re-initializations, want 1", got)
	}
	if got := tm.count("resilientmcp.client.redials"); got != 0 {
		t.Errorf("%d redials, want 0", got)
	}
	// The old session's life ended with its loss; the new one serves.
	eventually(t, "the old session's duration", func() bool {
		return len(tm.histogram("mcp.client.session.duration", semconv.ErrorTypeKey.String("expired"))) == 1
	})
	eventually(t, "one session ready", func() bool {
		return tm.count("resilientmcp.client.sessions", otelmcp.SessionStateKey.String("Ready")) == 1 &&
			tm.count("resilientmcp.client.sessions", otelmcp.SessionStateKey.String("Reconnecting")) == 0
	})
}

// The server down for a while (F7): the call's first attempt is refused,
// the call waits for the reconnect loop (a redial span under it), and its
// second attempt, not sent before, goes out once the server is back.
func TestOutageIsARedialUnderTheCall(t *testing.T) {
	tm := newTelemetry(t)
	srv := startServer(t, testserver.Config{Era: testserver.StatelessEra})
	c := newClient(t, tm, srv.URL(), client.WithKeepAlive(0))
	ctx := testCtx(t)
	if _, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "a"})); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	tm.tr.CloseIdleConnections()
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "b"}))
		done <- err
	}()
	eventually(t, "the client to see the outage", func() bool { return c.State() == client.Reconnecting })
	eventually(t, "a failed reconnect", func() bool { return tm.count("resilientmcp.client.dial.failures") > 0 })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the call through the outage: %v", err)
	}
	calls := tm.callSpans("tools/call echo")
	call := calls[len(calls)-1]
	t.Logf("\n%s", tm.tree(call))
	wantAttrs(t, call, otelmcp.CallAttemptsKey.Int(2))
	attempts := tm.attemptsOf(t, call, 2)
	wantAttrs(t, attempts[0], otelmcp.AttemptReasonKey.String("first"), semconv.ErrorTypeKey.String("connection_error"))
	wantAttrs(t, attempts[1], otelmcp.AttemptReasonKey.String("not_sent"))
	wantNoAttr(t, attempts[1], semconv.McpSessionIDKey) // the stateless era has none
	kids := tm.children(call)
	if len(kids) != 3 || kids[1].Name() != "redial" {
		t.Errorf("under the call, want attempt, redial, attempt:\n%s", tm.tree(call))
	}
	if got := tm.count("resilientmcp.client.attempts", otelmcp.AttemptReasonKey.String("not_sent")); got != 1 {
		t.Errorf("%d attempts after one not sent, want 1", got)
	}
}

// The circuit breaker (F36): open while the server is gone, counted once,
// and closed again when it is back.
func TestBreakerIsMetered(t *testing.T) {
	tm := newTelemetry(t)
	srv := startServer(t, testserver.Config{Era: testserver.SessionEra})
	c := newClient(t, tm, srv.URL(), client.WithFailFastAfter(300*time.Millisecond))
	ctx := testCtx(t)
	if _, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "a"})); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	// The call in flight when the server went may have been sent: either
	// error is right for it; what matters is the outage it starts.
	if _, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "b"})); !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("a call in the outage: %v", err)
	}
	eventually(t, "the breaker counted open", func() bool {
		return tm.count("resilientmcp.client.failing_fast") == 1 && tm.count("resilientmcp.client.breaker.trips") == 1
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the breaker counted closed", func() bool { return tm.count("resilientmcp.client.failing_fast") == 0 })
	if got := tm.count("resilientmcp.client.breaker.trips"); got != 1 {
		t.Errorf("%d trips, want 1", got)
	}
}

// An answer carrying another request's id (F18): a safe call's first
// attempt ends wrong_answer, the call waits for a new session (redial) and
// is replayed; an unsafe one ends outcome_unknown, its replay refused. The
// refused answers and the refused replay are counted.
func TestWrongAnswerIsRefusedAndCounted(t *testing.T) {
	tm := newTelemetry(t)
	srv := hostile.New(hostile.Then(1, hostile.WrongID(false), hostile.Right(false)))
	t.Cleanup(srv.Close)
	c := newClient(t, tm, srv.URL)
	ctx := testCtx(t)
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, toolRequest("echo", nil)); err != nil {
		t.Fatalf("a safe call: %v", err)
	}
	call := only(t, "tools/call echo", tm.callSpans("tools/call echo"))
	t.Logf("\n%s", tm.tree(call))
	attempts := tm.attemptsOf(t, call, 2)
	wantAttrs(t, attempts[0], semconv.ErrorTypeKey.String("wrong_answer"))
	wantAttrs(t, attempts[1], otelmcp.AttemptReasonKey.String("outcome_unknown"))
	if kids := tm.children(call); len(kids) != 3 || kids[1].Name() != "redial" {
		t.Errorf("under the call, want attempt, redial, attempt:\n%s", tm.tree(call))
	}
	if got := tm.count("resilientmcp.client.answers.refused", otelmcp.AnswerRefusalKey.String("wrong_id")); got != 1 {
		t.Errorf("%d wrong answers refused, want 1", got)
	}
	eventually(t, "the redial counted", func() bool { return tm.count("resilientmcp.client.redials") == 1 })

	srv.SetAnswer(hostile.Then(1, hostile.WrongID(false), hostile.Right(false)))
	_, err := c.CallTool(ctx, toolRequest("increment", nil))
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("an unsafe call = %v, want ErrOutcomeUnknown", err)
	}
	call = only(t, "tools/call increment", tm.callSpans("tools/call increment"))
	t.Logf("\n%s", tm.tree(call))
	tm.attemptsOf(t, call, 1)
	wantAttrs(t, call, semconv.ErrorTypeKey.String("outcome_unknown"), otelmcp.CallAttemptsKey.Int(1))
	if call.Status().Code != codes.Error || call.Status().Description != err.Error() {
		t.Errorf("call status %v, want error with the call's message", call.Status())
	}
	if got := tm.count("resilientmcp.client.replays.refused", semconv.GenAIToolNameKey.String("increment")); got != 1 {
		t.Errorf("%d replays refused, want 1", got)
	}
	if got := tm.count("resilientmcp.client.answers.refused", otelmcp.AnswerRefusalKey.String("wrong_id")); got != 2 {
		t.Errorf("%d wrong answers refused, want 2", got)
	}
	if ops := tm.histogram("mcp.client.operation.duration", semconv.ErrorTypeKey.String("outcome_unknown"), semconv.GenAIToolNameKey.String("increment")); len(ops) != 1 || ops[0].Count != 1 {
		t.Errorf("the failed call's duration: %v", ops)
	}
}

// The server's own answers: a JSON-RPC error is the call's error.type and
// rpc.response.status_code, with status Error; a tool's own failure
// (isError) is tool_error; prompts and resources name their target.
func TestServerAnswersAreClassified(t *testing.T) {
	tm := newTelemetry(t)
	srv := startServer(t, testserver.Config{Era: testserver.SessionEra})
	c := newClient(t, tm, srv.URL())
	ctx := testCtx(t)

	res, err := c.CallTool(ctx, toolRequest("add", map[string]any{"a": "x", "b": 1}))
	if err != nil || !res.IsError {
		t.Fatalf("add of a string = %v, %v; want a tool error", res, err)
	}
	call := only(t, "tools/call add", tm.callSpans("tools/call add"))
	wantAttrs(t, call, semconv.ErrorTypeKey.String("tool_error"))
	if call.Status().Code != codes.Error {
		t.Errorf("a tool error's status %v, want error", call.Status())
	}
	wantNoAttr(t, only(t, "attempt", tm.attemptsOf(t, call, 1)), semconv.ErrorTypeKey)

	req := mcp.GetPromptRequest{}
	req.Params.Name = "no-such-prompt"
	if _, err := c.GetPrompt(ctx, req); err == nil {
		t.Fatal("a prompt the server does not have: no error")
	}
	call = only(t, "prompts/get no-such-prompt", tm.callSpans("prompts/get no-such-prompt"))
	t.Logf("\n%s", tm.tree(call))
	wantAttrs(t, call,
		semconv.GenAIPromptNameKey.String("no-such-prompt"),
		semconv.ErrorTypeKey.String(strconv.Itoa(mcp.INVALID_PARAMS)),
		semconv.RPCResponseStatusCodeKey.String(strconv.Itoa(mcp.INVALID_PARAMS)),
	)
	wantNoAttr(t, call, semconv.GenAIOperationNameKey)
	if call.Status().Code != codes.Error {
		t.Errorf("a JSON-RPC error's status %v, want error", call.Status())
	}

	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = testserver.CounterURI
	if _, err := c.ReadResource(ctx, rr); err != nil {
		t.Fatal(err)
	}
	call = only(t, "resources/read", tm.callSpans("resources/read"))
	wantAttrs(t, call, semconv.McpResourceURIKey.String(testserver.CounterURI))
}

// 401 with OAuth (F20): the token is refused, the token layer refreshes it
// and sends the request again beneath mcp-go. That resend is an attempt of
// its own, with the HTTP span of the resent request under it; the refresh
// is counted.
func TestUnauthorizedResendIsAnAttempt(t *testing.T) {
	tm := newTelemetry(t)
	o := newOAuthRig(t, tm)
	ctx := testCtx(t)
	if _, err := o.c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "a"})); err != nil {
		t.Fatal(err)
	}
	o.as.InvalidateAccessTokens()
	if _, err := o.c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "b"})); err != nil {
		t.Fatal(err)
	}
	calls := tm.callSpans("tools/call echo")
	call := calls[len(calls)-1]
	t.Logf("\n%s", tm.tree(call))
	attempts := tm.attemptsOf(t, call, 2)
	wantAttrs(t, attempts[0], otelmcp.AttemptReasonKey.String("first"), semconv.ErrorTypeKey.String("unauthorized"))
	wantAttrs(t, attempts[1], otelmcp.AttemptReasonKey.String("unauthorized"))
	wantNoAttr(t, attempts[1], semconv.ErrorTypeKey)
	if attempts[0].Status().Code != codes.Error {
		t.Errorf("the refused attempt's status %v, want error", attempts[0].Status())
	}
	wantAttrs(t, call, otelmcp.CallAttemptsKey.Int(2))
	// The HTTP spans are the refused request's and the resent one's.
	for i, a := range attempts {
		var statuses []int64
		for _, h := range tm.children(a) {
			if v, ok := attr(h, "http.response.status_code"); ok {
				statuses = append(statuses, v.AsInt64())
			}
		}
		want := []int64{http.StatusUnauthorized}
		if i == 1 {
			want = []int64{http.StatusOK}
		}
		if len(statuses) != 1 || statuses[0] != want[0] {
			t.Errorf("attempt %d's HTTP answers %v, want %v", i+1, statuses, want)
		}
	}
	// The resent request carried the second attempt's context.
	metas := o.srv.ReceivedMeta("tools/call")
	if _, parent := traceparentOf(t, metas[len(metas)-1]); parent != attempts[1].SpanContext().SpanID() {
		t.Errorf("the resent tools/call's parent span %s, want the second attempt's %s", parent, attempts[1].SpanContext().SpanID())
	}
	eventually(t, "the refresh counted", func() bool { return tm.count("resilientmcp.client.token.refreshes") == 1 })
	if got := tm.count("resilientmcp.client.authorizations"); got != 1 {
		t.Errorf("%d authorizations, want 1 (the first token)", got)
	}
	if got := tm.count("resilientmcp.client.attempts", otelmcp.AttemptReasonKey.String("unauthorized")); got != 1 {
		t.Errorf("%d attempts after a 401, want 1", got)
	}
}

// On OpenTelemetry's no-op providers the observer records nothing, carries
// nothing to the server, and is not a MetaPropagator (so the client puts
// no layer under its HTTP client); calls through a restart work as ever.
func TestNoopProvidersAreAskedNothing(t *testing.T) {
	obs := otelmcp.NewObserver(otelmcp.WithTracerProvider(tracenoop.NewTracerProvider()), otelmcp.WithMeterProvider(metricnoop.NewMeterProvider()))
	if _, ok := obs.(observe.MetaPropagator); ok {
		t.Error("an observer on the no-op tracer is a MetaPropagator")
	}
	srv := startServer(t, testserver.Config{Era: testserver.SessionEra, RecordMeta: true})
	c, err := client.New(srv.URL(), client.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := testCtx(t)
	for i := range 2 {
		if _, err := c.CallTool(ctx, toolRequest("echo", map[string]any{"text": "a"})); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := c.Stats().Reinitializations; got != 1 {
		t.Errorf("%d re-initializations, want 1", got)
	}
	metas := srv.ReceivedMeta("tools/call")
	if len(metas) != 3 {
		t.Fatalf("the server saw %d tools/call, want 3 (one before the restart, two attempts after)", len(metas))
	}
	for _, m := range metas {
		if m != nil {
			t.Errorf("the server was sent _meta %v", m)
		}
	}
}

// A listing answered from the client's cache is a call span of its own,
// marked: "hit" within the server's ttlMs, with no attempt under it;
// "stale" when the server is down, after its attempt failed (F48).
func TestCachedListingIsMarked(t *testing.T) {
	tm := newTelemetry(t)
	// A ttl of 1 s: the second listing is a hit, the one after it, with
	// the server down, stale (Fresh would be the server's answer or an
	// error).
	srv := startServer(t, testserver.Config{Era: testserver.StatelessEra, CacheTTLMs: 1000, CacheScope: mcp.CacheScopePublic})
	c := newClient(t, tm, srv.URL())
	for range 2 {
		if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	time.Sleep(time.Second) // the ttl ends
	res, err := c.ListTools(client.WithCallOptions(t.Context(), client.FailFast()), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools with the server down = %v, want the stale listing", err)
	}
	if _, stale := client.Stale(res.Meta); !stale {
		t.Fatal("ListTools with the server down is not marked stale")
	}
	spans := tm.callSpans("tools/list")
	if len(spans) != 3 {
		t.Fatalf("%d tools/list spans, want 3", len(spans))
	}
	wantNoAttr(t, spans[0], otelmcp.CacheKey)
	wantAttrs(t, spans[1], otelmcp.CacheKey.String("hit"), otelmcp.CallAttemptsKey.Int(0))
	wantAttrs(t, spans[2], otelmcp.CacheKey.String("stale"))
	if spans[2].Status().Code == codes.Error {
		t.Errorf("the stale answer's span has status %v: it succeeded", spans[2].Status())
	}
}

// TestProcessRestartsCounted: a stdio server that exits at once is started
// again and again; each start after the first is a restart, counted.
func TestProcessRestartsCounted(t *testing.T) {
	tm := newTelemetry(t)
	opts := tm.options()
	c, err := client.NewStdio("/bin/sh", []string{"-c", "exit 3"}, opts[0]) // the observer; no HTTP client
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx); err == nil {
		t.Fatal("ping answered by a server that exits at once")
	}
	eventually(t, "restarts counted", func() bool { return tm.count("resilientmcp.client.process.restarts") >= 2 })
	if got, want := tm.count("resilientmcp.client.process.restarts"), int64(c.Stats().Restarts); got > want {
		t.Errorf("%d restarts counted; Stats says %d", got, want)
	}
}

// A call to a server over stdio is where the conventions put it: its span
// says network.transport "pipe", the command as server.address, and
// neither a port nor HTTP; and the server's name in the agent's config
// (client.WithServerName, as package fleet gives it).
func TestStdioCallSpan(t *testing.T) {
	tm := newTelemetry(t)
	command, env := stdioServer(t)
	c, err := client.NewStdio(command, nil, tm.options()[0], env, client.WithServerName("files")) // the observer; no HTTP client
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": "hi"}
	if _, err := c.CallTool(ctx, req); err != nil {
		t.Fatal(err)
	}
	spans := tm.callSpans("tools/call echo")
	if len(spans) != 1 {
		t.Fatalf("%d tools/call echo spans, want 1", len(spans))
	}
	wantAttrs(t, spans[0], semconv.NetworkTransportPipe, semconv.ServerAddressKey.String(filepath.Base(command)),
		otelmcp.ServerNameKey.String("files"))
	wantNoAttr(t, spans[0], semconv.ServerPortKey)
	wantNoAttr(t, spans[0], semconv.NetworkProtocolNameKey)
}
