package otelmcp_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/otelmcp"
)

// BenchmarkObserverCost is what observing a call costs. Each
// sub-benchmark makes one sequential echo call through each of three
// ResilientClients of the same in-process server per iteration, in an
// order drawn at random: one without an observer (none); a second without
// one, the control (two identical clients differ by the machine's noise,
// which the observer's ratio must be read against); and one with the
// observer:
//
//   - observer=noop: otelmcp on OpenTelemetry's no-op providers (trace/noop,
//     metric/noop); the goal is ≤ 1.02 of none;
//   - observer=global: otelmcp on the global providers with no SDK
//     installed, as a program that never sets one up has them (no-op, but
//     asked on every call, since an SDK may be installed at any time);
//   - observer=sdk: otelmcp on the SDK recording every span (always
//     sampled, batched to an exporter that drops them) and every metric
//     (a manual reader), propagating the W3C trace context in _meta (each
//     request's body rewritten, and decoded by the server).
//
// The observers are measured apart, so that the SDK's garbage and its
// exporter's goroutine do not fall on the others' calls. Reported: ns/call
// of each client, x-none (time over none's) of the control and the
// observer, and the allocations of a call, exact (testing.AllocsPerRun;
// the server's included, the same for all but sdk, whose server decodes
// the _meta it is sent).
//
// With ctx=background the calls are made with context.Background(), which
// a client answers with a deadline shared by the calls around; with
// ctx=deadline every call brings its own.
func BenchmarkObserverCost(b *testing.B) {
	for _, withDeadline := range []bool{false, true} {
		ctxName := "ctx=background"
		if withDeadline {
			ctxName = "ctx=deadline"
		}
		for _, observer := range []string{"noop", "global", "sdk"} {
			b.Run(ctxName+"/observer="+observer, func(b *testing.B) { benchObserverCost(b, observer, withDeadline) })
		}
	}
}

func benchObserverCost(b *testing.B, observer string, withDeadline bool) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()

	var obs client.Observer
	switch observer {
	case "noop":
		obs = otelmcp.NewObserver(otelmcp.WithTracerProvider(tracenoop.NewTracerProvider()), otelmcp.WithMeterProvider(metricnoop.NewMeterProvider()))
	case "global":
		obs = otelmcp.NewObserver()
	case "sdk":
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(dropSpans{}))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		obs = otelmcp.NewObserver(otelmcp.WithTracerProvider(tp), otelmcp.WithMeterProvider(mp),
			otelmcp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))
	}
	names := []string{"none", "control", observer}
	var clients [3]*client.ResilientClient
	for i, opts := range [][]client.Option{nil, nil, {client.WithObserver(obs)}} {
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
	// The order is drawn anew for every iteration: what a call leaves
	// behind falls on the next call, and a fixed rotation would have each
	// client always follow the same one.
	order := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		for _, j := range order.Perm(len(clients)) {
			spent[j] += call(clients[j])
		}
	}
	b.StopTimer()
	n := float64(b.N)
	for k, name := range names {
		b.ReportMetric(float64(spent[k])/n, name+"-ns/call")
		if k > 0 {
			b.ReportMetric(float64(spent[k])/float64(spent[0]), name+"-x-none")
		}
		if k != 1 {
			b.ReportMetric(testing.AllocsPerRun(200, func() { call(clients[k]) }), name+"-allocs/call")
		}
	}
}

// dropSpans is an exporter that drops what it is given.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }
