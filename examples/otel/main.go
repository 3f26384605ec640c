// Command otel shows what otelmcp records of a ResilientClient: a call
// through a server restart, traced and measured by MCP's semantic
// conventions, exported with OpenTelemetry's stdout exporters (no collector
// needed). The call is one span with two attempts under it: the first met
// the session the restart expired, the second went out on the new session
// after the re-initialization it waited for. The HTTP client is
// instrumented with otelhttp, so each attempt's HTTP request is a span under
// it, and the server is given each attempt's trace context in the
// request's params._meta.
//
//	go run ./examples/otel          # the exporters' JSON, then the call's span tree
//	go run ./examples/otel -quiet   # the span tree and the counters only
//
// It exits 0 when the call through the restart was recorded as expected
// and 1 otherwise, so it doubles as a smoke check.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/otelmcp"
)

func main() {
	quiet := flag.Bool("quiet", false, "print the span tree and the counters only, not the exporters' JSON")
	flag.Parse()
	var out io.Writer = os.Stdout
	if *quiet {
		out = io.Discard
	}
	if err := run(out); err != nil {
		fmt.Printf("FAILED: %v\n", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		return err
	}
	defer srv.Close()

	// The OpenTelemetry SDK, as a program sets it up: spans and metrics to
	// stdout. The span recorder is this program's own, to check and draw
	// the tree below.
	spanOut, err := stdouttrace.New(stdouttrace.WithWriter(out))
	if err != nil {
		return err
	}
	metricOut, err := stdoutmetric.New(stdoutmetric.WithWriter(out))
	if err != nil {
		return err
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spanOut), sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

	// The HTTP client, instrumented: its spans nest under the attempts.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	httpClient := &http.Client{Transport: otelhttp.NewTransport(tr, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop))}

	c, err := client.New(srv.URL(),
		client.WithObserver(otelmcp.NewObserver(otelmcp.WithTracerProvider(tp), otelmcp.WithMeterProvider(mp), otelmcp.WithPropagators(prop))),
		client.WithHTTPClient(httpClient),
	)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	echo := func(text string) error {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"text": text}
		_, err := c.CallTool(ctx, req)
		return err
	}
	if err := echo("before the restart"); err != nil {
		return err
	}
	if err := srv.Restart(); err != nil { // every session expires
		return err
	}
	// The restart closed the pooled connection. The client's own HTTP
	// client checks a pooled connection before writing on it; a plain
	// http.Transport, as here, finds out by writing, and the call would
	// meet the dead connection first (a third attempt, also sent again).
	// Dropping it shows the restart itself.
	tr.CloseIdleConnections()
	if err := echo("after the restart"); err != nil {
		return err
	}

	// Export: the batched spans, and the metrics read now.
	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	if err := metricOut.Export(ctx, &rm); err != nil {
		return err
	}
	fmt.Fprintln(out)

	ended := spans.Ended()
	var call sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Name() == "tools/call echo" {
			call = s // the last: the call through the restart
		}
	}
	if call == nil {
		return errors.New("no span for the call through the restart")
	}
	fmt.Println("The call through the restart:")
	fmt.Print(tree(ended, call, 1))
	fmt.Println()
	fmt.Println("Counters (resilientmcp.client.*):")
	for _, name := range []string{"resilientmcp.client.attempts", "resilientmcp.client.reinitializations", "resilientmcp.client.sessions"} {
		fmt.Printf("  %s\n", counter(rm, name))
	}

	var attempts []sdktrace.ReadOnlySpan
	var waited bool
	for _, s := range children(ended, call) {
		switch s.Name() {
		case "attempt":
			attempts = append(attempts, s)
		case "reinitialize":
			waited = true
		}
	}
	if len(attempts) != 2 || !waited || value(attempts[1], otelmcp.AttemptReasonKey) != "session_expired" {
		return errors.New("the call through the restart was not one span with two attempts, the second after the re-initialization")
	}
	fmt.Println()
	fmt.Println("otel example OK: one call span, two attempts, the re-initialization between them")
	return nil
}

// children are the spans whose parent is s, in the order they started.
func children(spans []sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, c := range spans {
		if c.Parent().SpanID() == s.SpanContext().SpanID() {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

// shown are the attributes the tree shows.
var shown = []attribute.Key{
	otelmcp.CallAttemptsKey, otelmcp.AttemptNumberKey, otelmcp.AttemptReasonKey,
	"mcp.session.id", "jsonrpc.request.id", "error.type", "http.response.status_code",
}

// tree draws s and the spans under it, one a line.
func tree(spans []sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan, depth int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%-*s %-8s %7.2fms", strings.Repeat("  ", depth), 30-2*depth, s.Name(), strings.ToUpper(s.SpanKind().String()), float64(s.EndTime().Sub(s.StartTime()).Microseconds())/1000)
	for _, k := range shown {
		if v := value(s, k); v != "" {
			if k == "mcp.session.id" && len(v) > 20 {
				v = v[:20] + "…"
			}
			fmt.Fprintf(&b, "  %s=%s", k, v)
		}
	}
	b.WriteByte('\n')
	for _, c := range children(spans, s) {
		b.WriteString(tree(spans, c, depth+1))
	}
	return b.String()
}

func value(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

// counter prints a sum's points, one attribute set each.
func counter(rm metricdata.ResourceMetrics, name string) string {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				return name + ": not a sum"
			}
			var points []string
			for _, p := range sum.DataPoints {
				var labels []string
				for _, kv := range p.Attributes.ToSlice() {
					if kv.Key == "mcp.method.name" || kv.Key == otelmcp.AttemptReasonKey || kv.Key == otelmcp.SessionStateKey {
						labels = append(labels, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
					}
				}
				points = append(points, fmt.Sprintf("{%s} %d", strings.Join(labels, ","), p.Value))
			}
			slices.Sort(points)
			return name + " " + strings.Join(points, " ")
		}
	}
	return name + ": none"
}
