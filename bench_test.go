package resilientmcp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// BenchmarkBlackholeDetection measures how long an idle session's connection
// can be half-open before the keepalive prober notices, as a multiple of the
// keepalive interval. Each iteration blackholes every open connection at an
// arbitrary moment of the probe cycle and waits for the failed probe.
// Expected: the rest of the interval (up to 1.1x with jitter) plus the probe
// timeout (0.5x), so about 1x on average and at most 1.6x.
func BenchmarkBlackholeDetection(b *testing.B) {
	const interval = 50 * time.Millisecond
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	proxy, err := faultproxy.New(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	tr := &http.Transport{DialContext: proxy.DialContext}
	defer tr.CloseIdleConnections()
	c, err := client.New(proxy.URL("/mcp"), client.WithKeepAlive(interval), client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		b.Fatal(err)
	}

	var total, worst time.Duration
	for i := 0; b.Loop(); i++ {
		waitFor(b, func() bool { return c.State() == client.Ready })
		// Land somewhere in the probe cycle, not always right after a probe.
		time.Sleep(time.Duration(i%5) * interval / 5)
		failures := c.Stats().ProbeFailures
		start := time.Now()
		proxy.BlackholeAll()
		waitFor(b, func() bool { return c.Stats().ProbeFailures > failures })
		d := time.Since(start)
		total += d
		worst = max(worst, d)
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(interval), "x-interval")
	b.ReportMetric(float64(worst)/float64(interval), "worst-x-interval")
}

func waitFor(b *testing.B, cond func() bool) {
	b.Helper()
	for range 10000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatal("timed out")
}
