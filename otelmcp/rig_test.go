package otelmcp_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/otelmcp"
)

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		serveStdio() // the test binary re-executed as a stdio server
		return
	}
	goleak.VerifyTestMain(m)
}

// stdioServerEnv makes the test binary an MCP server over stdio, with the
// tool echo, for client.NewStdio (stdioServer).
const stdioServerEnv = "OTELMCP_TEST_STDIO_SERVER"

func serveStdio() {
	s := server.NewMCPServer("otelmcp-test-stdio", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	if err := server.ServeStdio(s); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// stdioServer is the command and environment of the test binary as a
// stdio server.
func stdioServer(t *testing.T) (command string, env client.Option) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe, client.WithStdioEnv(stdioServerEnv + "=1")
}

// telemetry is the OpenTelemetry SDK recording in memory: every span, and
// metrics read on demand.
type telemetry struct {
	t      *testing.T
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	prop   propagation.TextMapPropagator
	// http is an http.Client instrumented with otelhttp on the same
	// provider, whose idle connections the test may close.
	http *http.Client
	tr   *http.Transport
}

func newTelemetry(t *testing.T) *telemetry {
	tm := &telemetry{t: t, spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tm.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tm.spans))
	tm.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	tm.tr = http.DefaultTransport.(*http.Transport).Clone()
	tm.http = &http.Client{Transport: otelhttp.NewTransport(tm.tr, otelhttp.WithTracerProvider(tm.tp), otelhttp.WithPropagators(tm.prop))}
	t.Cleanup(tm.tr.CloseIdleConnections)
	return tm
}

// options are a client's: the observer on the SDK, and the instrumented
// HTTP client.
func (tm *telemetry) options() []client.Option {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tm.reader))
	tm.t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs := otelmcp.NewObserver(otelmcp.WithTracerProvider(tm.tp), otelmcp.WithMeterProvider(mp), otelmcp.WithPropagators(tm.prop))
	return []client.Option{client.WithObserver(obs), client.WithHTTPClient(tm.http)}
}

// callSpans are the ended spans named name, in the order they ended.
func (tm *telemetry) callSpans(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// children are the ended spans whose parent is s, in the order they
// started.
func (tm *telemetry) children(s sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, c := range tm.spans.Ended() {
		if c.Parent().SpanID() == s.SpanContext().SpanID() {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

// tree draws s and the spans under it, one per line, with the attributes
// the tests look at: what a failing test prints.
func (tm *telemetry) tree(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(&b, "%s%s [%s]", strings.Repeat("  ", depth), s.Name(), s.SpanKind())
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case otelmcp.AttemptNumberKey, otelmcp.AttemptReasonKey, "error.type", "http.response.status_code", "mcp.session.id", otelmcp.CallAttemptsKey:
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
			}
		}
		if s.Status().Code != 0 {
			fmt.Fprintf(&b, " status=%s", s.Status().Code)
		}
		b.WriteByte('\n')
		for _, c := range tm.children(s) {
			walk(c, depth+1)
		}
	}
	walk(s, 0)
	return b.String()
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// wantAttrs checks that s has each attribute with its value.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want ...attribute.KeyValue) {
	t.Helper()
	for _, kv := range want {
		got, ok := attr(s, kv.Key)
		if !ok || got != kv.Value {
			t.Errorf("span %q: %s = %q (present %v), want %q", s.Name(), kv.Key, got.String(), ok, kv.Value.String())
		}
	}
}

// wantNoAttr checks that s does not have key.
func wantNoAttr(t *testing.T, s sdktrace.ReadOnlySpan, key attribute.Key) {
	t.Helper()
	if v, ok := attr(s, key); ok {
		t.Errorf("span %q has %s = %q", s.Name(), key, v.String())
	}
}

// metrics reads every metric now.
func (tm *telemetry) metrics() map[string]metricdata.Aggregation {
	tm.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		tm.t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelmcp.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// matches reports whether set has every attribute of want.
func matches(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// count is the sum of the points of the counter name whose attributes
// include want.
func (tm *telemetry) count(name string, want ...attribute.KeyValue) int64 {
	sum, _ := tm.metrics()[name].(metricdata.Sum[int64])
	var n int64
	for _, p := range sum.DataPoints {
		if matches(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// histogram is the points of the histogram name whose attributes include
// want.
func (tm *telemetry) histogram(name string, want ...attribute.KeyValue) []metricdata.HistogramDataPoint[float64] {
	h, _ := tm.metrics()[name].(metricdata.Histogram[float64])
	var out []metricdata.HistogramDataPoint[float64]
	for _, p := range h.DataPoints {
		if matches(p.Attributes, want) {
			out = append(out, p)
		}
	}
	return out
}

// eventually waits, boundedly, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func toolRequest(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

// traceparentOf is the trace and parent span of a W3C traceparent in a
// _meta the server received.
func traceparentOf(t *testing.T, meta map[string]any) (trace.TraceID, trace.SpanID) {
	t.Helper()
	tp, _ := meta["traceparent"].(string)
	parts := strings.Split(tp, "-")
	if len(parts) != 4 {
		t.Fatalf("_meta %v has no traceparent", meta)
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	return tid, sid
}

// oauthRig is a test server guarded by the loopback authorization server,
// and a client observed by tm that authorizes with WithOAuth, approving at
// once.
type oauthRig struct {
	c   *client.ResilientClient
	as  *authserver.Server
	srv *testserver.Server
}

func newOAuthRig(t *testing.T, tm *telemetry) *oauthRig {
	t.Helper()
	as, err := authserver.Start(authserver.Config{AccessTokenLifetime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	cfg := testserver.Config{Era: testserver.SessionEra, RecordMeta: true}
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	// The guard needs the server's URL, known once it listens.
	cfg.Guard = func(next http.Handler) http.Handler { return as.Protect(srv.URL(), next) }
	srv.Reconfigure(cfg)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL(), append(tm.options(), client.WithOAuth(client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:8976/callback",
		Authorize:   authserver.Approve,
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &oauthRig{c: c, as: as, srv: srv}
}
