package bench

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkFirstCallAfterIdle is what an idle client keeping no connection
// (the default) costs its first call after an idle period: the call dials.
// Three clients of one in-process server take turns, session era: a
// ResilientClient with the default, one with WithKeepIdleConnection(true),
// and raw mcp-go. Each iteration lets both ResilientClients be probed since
// their last call (the default one then holds no connection), then times
// one echo call through each, in rotating order. Reported: the first call
// after idle of each (dropped-us, kept-us, raw-us) and dropped over kept
// (x-kept): what not keeping the connection costs that call on loopback.
// On a network the dial costs one round trip more, and a resumed TLS
// handshake over https.
func BenchmarkFirstCallAfterIdle(b *testing.B) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	raw := rig.RawClient(b, srv.URL())
	const interval = 5 * time.Millisecond
	open := func(keep bool) *client.ResilientClient {
		c, err := client.New(srv.URL(), client.WithKeepAlive(interval), client.WithKeepIdleConnection(keep))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		if _, err := c.Initialize(context.Background(), rig.BenchInit()); err != nil {
			b.Fatal(err)
		}
		return c
	}
	dropped, kept := open(false), open(true)
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	calls := []func(context.Context, mcp.CallToolRequest) error{
		func(ctx context.Context, r mcp.CallToolRequest) error { _, err := dropped.CallTool(ctx, r); return err },
		func(ctx context.Context, r mcp.CallToolRequest) error { _, err := kept.CallTool(ctx, r); return err },
		func(ctx context.Context, r mcp.CallToolRequest) error { _, err := raw.CallTool(ctx, r); return err },
	}
	var took [3]time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		probes := [2]uint64{dropped.Stats().Probes, kept.Stats().Probes}
		waitFor(b, func() bool { return dropped.Stats().Probes > probes[0] && kept.Stats().Probes > probes[1] })
		b.StartTimer()
		for j := range calls {
			k := (i + j) % len(calls)
			start := time.Now()
			if err := calls[k](context.Background(), req); err != nil {
				b.Fatal(err)
			}
			took[k] += time.Since(start)
		}
	}
	n := float64(b.N) * float64(time.Microsecond)
	b.ReportMetric(float64(took[0])/n, "dropped-us")
	b.ReportMetric(float64(took[1])/n, "kept-us")
	b.ReportMetric(float64(took[2])/n, "raw-us")
	b.ReportMetric(float64(took[0])/float64(took[1]), "x-kept")
	b.ReportMetric(float64(took[0])/float64(took[2]), "x-raw")
}
