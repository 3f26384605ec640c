package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
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
	succeeded := func() uint64 { s := c.Stats(); return s.Probes - s.ProbeFailures }
	var lastFailure uint64 // successful probes when the last failure was seen
	for i := 0; b.Loop(); i++ {
		// The connection to blackhole is the one a successful probe left
		// idle: after a failure, wait for the probe that opens a fresh one,
		// or it would be opened after the blackhole and never fail.
		if i > 0 {
			waitFor(b, func() bool { return succeeded() > lastFailure })
		}
		waitFor(b, func() bool { return c.State() == client.Ready })
		// Land somewhere in the probe cycle, not always right after a probe.
		time.Sleep(time.Duration(i%5) * interval / 5)
		failures := c.Stats().ProbeFailures
		start := time.Now()
		proxy.BlackholeAll()
		waitFor(b, func() bool { return c.Stats().ProbeFailures > failures })
		d := time.Since(start)
		lastFailure = succeeded()
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

// BenchmarkThroughput compares ResilientClient with raw mcp-go, on the same
// in-process server in the same sub-benchmark: b.N echo calls spread over
// the goroutines, through (A) a raw mcp-go client with its default
// http.Client, as users have it; (B) a raw mcp-go client given an
// http.Client like the one ResilientClient makes for itself (64 idle
// connections per host instead of Go's default 2); (C) a ResilientClient
// with the given pool size; and two references, each on an http.Client
// like B's: (D) the official Go SDK's client, and (E) net/http posting the
// bytes raw mcp-go posts, the floor (bench_refs_test.go). Each goes twice,
// in the order A B C D E E D C B A, for half the calls each time, so that
// drift in the machine's speed falls on all alike.
// Reported: the five rates, x-raw (ResilientClient / raw as users have it),
// x-raw-tuned (ResilientClient / raw on an equal HTTP client: what the
// wrapper itself costs or gains under load), and the references on the
// same HTTP client as B: gosdk-x-raw-tuned and nethttp-x-raw-tuned.
func BenchmarkThroughput(b *testing.B) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close) // after the raw clients' cleanups
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	for _, goroutines := range []int{1, 16, 256} {
		for _, size := range []int{1, 4} {
			b.Run(fmt.Sprintf("goroutines=%d/pool=%d", goroutines, size), func(b *testing.B) {
				raw := rig.RawClient(b, srv.URL())
				tunedHTTP := likeResilientHTTPClient()
				defer tunedHTTP.CloseIdleConnections()
				tuned := rig.RawClient(b, srv.URL(), transport.WithHTTPBasicClient(tunedHTTP))
				rc, err := client.New(srv.URL(), client.WithPoolSize(size))
				if err != nil {
					b.Fatal(err)
				}
				defer rc.Close()
				if _, err := rc.Initialize(context.Background(), rig.BenchInit()); err != nil {
					b.Fatal(err)
				}
				sdkHTTP := likeResilientHTTPClient()
				defer sdkHTTP.CloseIdleConnections()
				sdk := goSDKClient(b, srv.URL(), sdkHTTP)
				floorHTTP := likeResilientHTTPClient()
				defer floorHTTP.CloseIdleConnections()
				floor := netHTTPFloor(b, srv.URL(), floorHTTP)
				clients := []callFunc{raw.CallTool, tuned.CallTool, rc.CallTool, sdk, floor}
				var spent [5]time.Duration
				first := b.N / 2
				for _, k := range []int{0, 1, 2, 3, 4, 4, 3, 2, 1, 0} {
					n := first
					if spent[k] > 0 {
						n = b.N - first
					}
					spent[k] += callsTake(b, n, goroutines, clients[k])
				}
				rate := func(k int) float64 { return float64(b.N) / spent[k].Seconds() }
				b.ReportMetric(rate(2), "calls/s")
				b.ReportMetric(rate(0), "raw-calls/s")
				b.ReportMetric(rate(1), "raw-tuned-calls/s")
				b.ReportMetric(rate(2)/rate(0), "x-raw")
				b.ReportMetric(rate(2)/rate(1), "x-raw-tuned")
				b.ReportMetric(rate(3), "gosdk-calls/s")
				b.ReportMetric(rate(3)/rate(1), "gosdk-x-raw-tuned")
				b.ReportMetric(rate(4), "nethttp-calls/s")
				b.ReportMetric(rate(4)/rate(1), "nethttp-x-raw-tuned")
			})
		}
	}
}

// likeResilientHTTPClient is an http.Client with the settings ResilientClient
// gives its own (see WithHTTPClient).
func likeResilientHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.IdleConnTimeout = 50 * time.Second
	t.MaxIdleConnsPerHost = 64
	t.MaxIdleConns = 256
	return &http.Client{Transport: t}
}

// callsTake makes n echo calls over the given number of goroutines and
// returns how long they took.
func callsTake(b *testing.B, n, goroutines int, call callFunc) time.Duration {
	b.Helper()
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range goroutines {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := call(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkCallLatency compares sequential echo calls through raw mcp-go
// and through a ResilientClient (keepalive on, the default 30s) on the same
// in-process server, next to two references (bench_refs_test.go): the
// official Go SDK's client with its default http.Client, as users have it,
// and net/http posting the bytes raw mcp-go posts, the floor. Each
// iteration makes 16 calls through each client in turn, in an order that
// changes from one iteration to the next, so that drift in the machine's
// speed falls on all alike; ns/op and allocs/op cover the 64 calls. The
// per-client figures are reported as ns/call, allocs/call
// (ResilientClient), raw-ns/call, raw-allocs/call, gosdk-ns/call,
// gosdk-allocs/call and nethttp-ns/call, nethttp-allocs/call, and their
// comparison with raw mcp-go as x-raw (time ratio; 1.05 = 5% slower than
// raw), gosdk-x-raw, nethttp-x-raw and extra-allocs/call (ResilientClient's
// allocations beyond raw's). Allocation counts include the in-process
// server's, which is the same for all, so the difference is the client's.
//
// With ctx=background all are called with context.Background(), so the
// ResilientClient adds the deadline of WithCallTimeout (a cancellable
// context under every request, which mcp-go and net/http then pay for);
// with ctx=deadline all get a context with a deadline, as careful agent
// code passes, and only the wrapper itself is compared.
func BenchmarkCallLatency(b *testing.B) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		for _, withDeadline := range []bool{false, true} {
			name := "era=" + era.String() + "/ctx=background"
			if withDeadline {
				name = "era=" + era.String() + "/ctx=deadline"
			}
			b.Run(name, func(b *testing.B) { benchCallLatency(b, era, withDeadline) })
		}
	}
}

func benchCallLatency(b *testing.B, era testserver.Era, withDeadline bool) {
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close) // after the raw client's cleanup
	raw := rig.RawClient(b, srv.URL())
	rc, err := client.New(srv.URL(), client.WithKeepAlive(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	sdk := goSDKClient(b, srv.URL(), nil)
	floorHTTP := likeResilientHTTPClient()
	defer floorHTTP.CloseIdleConnections()
	floor := netHTTPFloor(b, srv.URL(), floorHTTP)
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	const rawK, resilientK, sdkK, floorK = 0, 1, 2, 3
	clients := []callFunc{rawK: raw.CallTool, resilientK: rc.CallTool, sdkK: sdk, floorK: floor}
	// Each iteration makes latencyRun calls in a row through each client,
	// in an order that changes from one iteration to the next: over three
	// iterations each client's run comes once right after each other
	// client's, never after its own. A call leaves work behind when it
	// returns (goroutines finishing, garbage): measured, a call right
	// after a go-sdk call took about 50µs longer than after any other
	// client's, and taking turns call by call charged that to the others.
	// In runs each client pays for its own, but for the first call of a
	// run, which pays for the run before it, alike for all.
	const latencyRun = 16
	order := [3][4]int{ // of rawK, resilientK, sdkK, floorK = 0, 1, 2, 3
		{0, 1, 2, 3},
		{1, 3, 0, 2},
		{0, 3, 2, 1},
	}
	var spent [4]time.Duration
	for i := 0; b.Loop(); i++ {
		for _, k := range order[i%3] {
			for range latencyRun {
				spent[k] += timeCall(b, clients[k], req, withDeadline)
			}
		}
	}
	b.StopTimer()
	perCall := func(k int) float64 { return float64(spent[k]) / float64(b.N*latencyRun) }
	b.ReportMetric(perCall(resilientK), "ns/call")
	b.ReportMetric(perCall(rawK), "raw-ns/call")
	b.ReportMetric(perCall(resilientK)/perCall(rawK), "x-raw")
	b.ReportMetric(perCall(sdkK), "gosdk-ns/call")
	b.ReportMetric(perCall(sdkK)/perCall(rawK), "gosdk-x-raw")
	b.ReportMetric(perCall(floorK), "nethttp-ns/call")
	b.ReportMetric(perCall(floorK)/perCall(rawK), "nethttp-x-raw")
	// Exact counts, as -benchmem takes them, one client at a time.
	allocs := func(k int) float64 {
		return testing.AllocsPerRun(200, func() { timeCall(b, clients[k], req, withDeadline) })
	}
	resilientAllocs, rawAllocs := allocs(resilientK), allocs(rawK)
	b.ReportMetric(resilientAllocs, "allocs/call")
	b.ReportMetric(rawAllocs, "raw-allocs/call")
	b.ReportMetric(resilientAllocs-rawAllocs, "extra-allocs/call")
	b.ReportMetric(allocs(sdkK), "gosdk-allocs/call")
	b.ReportMetric(allocs(floorK), "nethttp-allocs/call")
}

// timeCall times one call, made with a context that has a deadline if
// withDeadline is set.
func timeCall(b *testing.B, call callFunc, req mcp.CallToolRequest, withDeadline bool) time.Duration {
	start := time.Now()
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if withDeadline {
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
	}
	defer cancel()
	if _, err := call(ctx, req); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
