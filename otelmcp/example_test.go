package otelmcp_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/otelmcp"
)

// A call resent after the server restarted (its session expired) is one
// span with an attempt span under it for each send, and the wait for the
// re-initialization between them. The spans are recorded in memory
// here; a program gives NewObserver its TracerProvider (and
// MeterProvider), or lets it use the global ones.
func ExampleNewObserver() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL(), client.WithObserver(otelmcp.NewObserver(otelmcp.WithTracerProvider(tp))))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		log.Fatal(err)
	}
	if err := srv.Restart(); err != nil { // the session expires
		log.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "hello"}
	if _, err := c.CallTool(ctx, req); err != nil {
		log.Fatal(err)
	}

	// The call is one span. Under it: an attempt span for each send, and
	// the wait for the re-initialization between them. (How many attempts
	// depends on timing: a restart may also close the connection the
	// client was about to send on, which costs one resend more.)
	ended := spans.Ended()
	for _, call := range ended {
		if call.Name() != "tools/call echo" {
			continue
		}
		fmt.Println(call.Name(), call.SpanKind())
		var reinitialized bool
		var last sdktrace.ReadOnlySpan
		for _, s := range ended {
			if s.Parent().SpanID() != call.SpanContext().SpanID() {
				continue
			}
			switch {
			case s.Name() == "reinitialize":
				reinitialized = true
			case s.Name() == "attempt" && (last == nil || s.StartTime().After(last.StartTime())):
				last = s
			}
		}
		fmt.Println("  re-initialized between attempts:", reinitialized)
		fmt.Println("  last attempt:", attrs(last, otelmcp.AttemptReasonKey, "error.type"))
	}
	// Output:
	// tools/call echo client
	//   re-initialized between attempts: true
	//   last attempt: resilientmcp.attempt.reason=session_expired
}

// attrs are s's attributes of keys, as key=value.
func attrs(s sdktrace.ReadOnlySpan, keys ...attribute.Key) string {
	var out []string
	for _, kv := range s.Attributes() {
		if slices.Contains(keys, kv.Key) {
			out = append(out, string(kv.Key)+"="+kv.Value.String())
		}
	}
	return strings.Join(out, " ")
}
