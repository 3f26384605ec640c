package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkTokenLayer is the per-call cost of WithOAuth's token
// RoundTripper with a valid token, against the same client sending the
// same token as a static header (WithHeaders), and raw mcp-go with that
// header, on one guarded server, taking turns.
func BenchmarkTokenLayer(b *testing.B) {
	_, srv := rig.GuardedServer(b, authserver.Config{AccessTokenLifetime: time.Hour}, testserver.Config{Era: testserver.SessionEra})
	br, store := &rig.Browser{}, &rig.RecordingStore{}
	oc, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:8976/callback", Authorize: br.Authorize, TokenStore: store,
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer oc.Close()
	if _, err := oc.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	header := map[string]string{"Authorization": "Bearer " + store.Secrets()[0]}
	sc, err := client.New(srv.URL(), client.WithHeaders(header))
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	if _, err := sc.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	raw := rig.RawClient(b, srv.URL(), transport.WithHTTPHeaders(header))
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	var oauthNs, staticNs, rawNs time.Duration
	for i := 0; b.Loop(); i++ {
		calls := []func(){
			func() { oauthNs += timeCall(b, oc.CallTool, req, false) },
			func() { staticNs += timeCall(b, sc.CallTool, req, false) },
			func() { rawNs += timeCall(b, raw.CallTool, req, false) },
		}
		for j := range calls {
			calls[(i+j)%len(calls)]()
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(oauthNs)/n, "ns/call")
	b.ReportMetric(float64(oauthNs)/float64(staticNs), "x-static-header")
	b.ReportMetric(float64(oauthNs)/float64(rawNs), "x-raw")
	allocs := testing.AllocsPerRun(200, func() { timeCall(b, oc.CallTool, req, false) })
	static := testing.AllocsPerRun(200, func() { timeCall(b, sc.CallTool, req, false) })
	b.ReportMetric(allocs-static, "extra-allocs/call")
}

// BenchmarkTokenExpiry256: each iteration lets the token expire (1 s) while the client
// idles, then 256 goroutines call at once, with a pool of 4 sessions.
// Exactly one refresh must serve them all.
// Each iteration takes over a second: run it with -benchtime=Nx.
func BenchmarkTokenExpiry256(b *testing.B) {
	const lifetime = time.Second
	as, srv := rig.GuardedServer(b, authserver.Config{AccessTokenLifetime: lifetime}, testserver.Config{Era: testserver.SessionEra})
	br := &rig.Browser{}
	c, err := client.New(srv.URL(), client.WithPoolSize(4), client.WithOAuth(client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:8976/callback", Authorize: br.Authorize,
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	before := as.Stats()
	var burst time.Duration
	for b.Loop() {
		time.Sleep(lifetime + 100*time.Millisecond)
		start := time.Now()
		var wg sync.WaitGroup
		for range 256 {
			wg.Go(func() {
				if _, err := c.CallTool(context.Background(), req); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		burst += time.Since(start)
	}
	b.StopTimer()
	after := as.Stats()
	refreshes := float64(after.Refreshes - before.Refreshes)
	b.ReportMetric(refreshes/float64(b.N), "refreshes/expiry")
	b.ReportMetric(float64(after.ReuseDetected), "reuses")
	b.ReportMetric(float64(burst.Microseconds())/float64(b.N)/1000, "ms/burst")
	if refreshes != float64(b.N) || after.ReuseDetected != 0 {
		b.Errorf("%v refreshes for %d expiries, %d reuses; want exactly one per expiry, none", refreshes, b.N, after.ReuseDetected)
	}
}
