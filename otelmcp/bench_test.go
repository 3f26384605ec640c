package otelmcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/otelmcp"
)

// BenchmarkObserverCost is what observing a call costs: one sequential
// echo call through each of three ResilientClients of the same in-process
// server per iteration, taking turns going first: one without an
// observer; one with otelmcp on OpenTelemetry's no-op providers (the
// global defaults, as a program that installs no SDK has them); and one
// with otelmcp on the SDK recording every span (always sampled, batched to
// an exporter that drops them), every metric (a manual reader) and
// propagating the W3C trace context in _meta (each request's body
// rewritten). Reported: ns/call of each, and x-none (time over the client
// without an observer; the goal for noop is ≤ 1.02) and the allocations
// of each call, exact (testing.AllocsPerRun; the server's included, the
// same for all).
//
// With ctx=background the calls are made with context.Background(), which
// the client without an observer answers with a shared deadline while an
// observed call, whose context is the observer's, gets its own; with
// ctx=deadline every call brings its deadline.
func BenchmarkObserverCost(b *testing.B) {
	for _, withDeadline := range []bool{false, true} {
		name := "ctx=background"
		if withDeadline {
			name = "ctx=deadline"
		}
		b.Run(name, func(b *testing.B) { benchObserverCost(b, withDeadline) })
	}
}

func benchObserverCost(b *testing.B, withDeadline bool) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()

	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(dropSpans{}))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	recording := otelmcp.NewObserver(otelmcp.WithTracerProvider(tp), otelmcp.WithMeterProvider(mp),
		otelmcp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))

	var clients [3]*client.ResilientClient // none, noop, sdk
	for i, opts := range [][]client.Option{nil, {client.WithObserver(otelmcp.NewObserver())}, {client.WithObserver(recording)}} {
		c, err := client.New(srv.URL(), opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
			b.Fatal(err)
		}
		clients[i] = c
	}
	req := toolRequest("echo", map[string]any{"text": "x"})
	call := func(c *client.ResilientClient) time.Duration {
		start := time.Now()
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if withDeadline {
			ctx, cancel = context.WithTimeout(ctx, time.Minute)
		}
		defer cancel()
		if _, err := c.CallTool(ctx, req); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var spent [3]time.Duration
	for i := 0; b.Loop(); i++ {
		// Each goes first, second and third in turn, so that whatever
		// the order costs falls on all alike.
		for k := range 3 {
			j := (i + k) % 3
			spent[j] += call(clients[j])
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(spent[0])/n, "none-ns/call")
	b.ReportMetric(float64(spent[1])/n, "noop-ns/call")
	b.ReportMetric(float64(spent[2])/n, "sdk-ns/call")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "noop-x-none")
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "sdk-x-none")
	for k, unit := range []string{"none-allocs/call", "noop-allocs/call", "sdk-allocs/call"} {
		b.ReportMetric(testing.AllocsPerRun(200, func() { call(clients[k]) }), unit)
	}
}

// dropSpans is an exporter that drops what it is given.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }
