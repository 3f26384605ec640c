package bench

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
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

// BenchmarkFirstCall is what a new client's first call costs when the
// server's initialize takes 1 s (frameworks that wait for the client's
// capabilities first), session era, for a client that listens for
// notifications: a ResilientClient made, a handler registered and one echo
// called with no Initialize before it, and raw mcp-go made to listen,
// started, initialized and called; each closed after. Reported: each first
// call (first-ms, raw-ms), ours over raw (x-raw), and what the server saw
// of ours per call (inits/op, deletes/op): one initialize and no DELETE,
// where a client that negotiates the era on one session and listens on
// another pays two handshakes, about 2 s.
func BenchmarkFirstCall(b *testing.B) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra, SlowInitialize: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	// Each is timed from the client's making to its first call's answer;
	// what the server saw of ours is read before its close's DELETE.
	ours := func() (took time.Duration, inits, deletes int64) {
		beforeInits, beforeDeletes := srv.RPCs("initialize"), srv.HTTPRequests("DELETE")
		start := time.Now()
		c, err := client.New(srv.URL())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.OnNotification(func(mcp.JSONRPCNotification) {})
		if _, err := c.CallTool(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		took = time.Since(start)
		return took, srv.RPCs("initialize") - beforeInits, srv.HTTPRequests("DELETE") - beforeDeletes
	}
	raw := func() time.Duration {
		//lint:ignore SA1019 the session era's GET stream, as ours opens it
		return freshCall(b, srv.URL(), req, transport.WithContinuousListening(), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	}
	var took [2]time.Duration
	var inits, deletes int64
	for b.Loop() {
		t, i, d := ours()
		took[0] += t
		inits += i
		deletes += d
		took[1] += raw()
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0])/n/float64(time.Millisecond), "first-ms")
	b.ReportMetric(float64(took[1])/n/float64(time.Millisecond), "raw-ms")
	b.ReportMetric(float64(took[0])/float64(took[1]), "x-raw")
	b.ReportMetric(float64(inits)/n, "inits/op")
	b.ReportMetric(float64(deletes)/n, "deletes/op")
}
