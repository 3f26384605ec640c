package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkClientCPU measures what a tools/call costs the process that
// makes it, as a user's machine sees it: the server runs in another
// process (this binary run again, as BenchmarkIdleClients' server), so
// the process's CPU time (getrusage RUSAGE_SELF, user and system) is the
// client's alone. Three clients of one server, each on an http.Client
// like the ResilientClient's own (64 idle connections per host): raw
// mcp-go (k=raw), a ResilientClient (keepalive on, 30s) and go-sdk's
// client. Each makes b.N echo calls over the given number of goroutines,
// half of them in the order raw, resilient, go-sdk and half in the
// reverse, so that drift in the machine's speed falls on all alike; before
// each block the process collects its garbage and waits 20ms, so that no
// client's leftover work is counted in the next one's block.
//
// Reported, per call: cpu-ns/call (the ResilientClient's),
// raw-cpu-ns/call and gosdk-cpu-ns/call, and cpu-x-raw, gosdk-cpu-x-raw;
// wall-ns/call (the run's time over its calls: at one goroutine a call's
// latency, at 64 the inverse of throughput), raw-wall-ns/call and
// wall-x-raw; allocs/call and B/call of each (runtime.MemStats, the
// process's: the client's only).
//
//	go test -run '^$' -bench BenchmarkClientCPU -benchtime=10000x -count=3 ./test/bench | go run ./tools/benchspread
func BenchmarkClientCPU(b *testing.B) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		b.Run(fmt.Sprintf("era=%s", era), func(b *testing.B) {
			url, stop := startServerProcess(b, era)
			defer stop()
			for _, goroutines := range []int{1, 64} {
				b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
					benchClientCPU(b, url, goroutines)
				})
			}
		})
	}
}

// clientCost is what one client's calls cost the process.
type clientCost struct {
	cpu, wall     time.Duration
	allocs, bytes uint64
}

func benchClientCPU(b *testing.B, url string, goroutines int) {
	rawHTTP := likeResilientHTTPClient()
	defer rawHTTP.CloseIdleConnections()
	raw := rig.RawClient(b, url, transport.WithHTTPBasicClient(rawHTTP))
	rc, err := client.New(url, client.WithKeepAlive(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	sdkHTTP := likeResilientHTTPClient()
	defer sdkHTTP.CloseIdleConnections()
	sdk := goSDKClient(b, url, sdkHTTP)

	const rawK, resilientK, sdkK = 0, 1, 2
	clients := [3]callFunc{rawK: raw.CallTool, resilientK: rc.CallTool, sdkK: sdk}
	var cost [3]clientCost
	run := func(k, n int) {
		// What the last client left running (go-sdk's client leaves work
		// after a call returns) and its garbage are not this one's: let
		// it finish and collect, outside the measurement.
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0 := processCPU()
		cost[k].wall += callsTake(b, n, goroutines, clients[k])
		cost[k].cpu += processCPU() - c0
		runtime.ReadMemStats(&m1)
		cost[k].allocs += m1.Mallocs - m0.Mallocs
		cost[k].bytes += m1.TotalAlloc - m0.TotalAlloc
	}
	for k := range clients { // warm: connections, caches
		run(k, 200)
	}
	cost = [3]clientCost{}
	b.ResetTimer()
	half := b.N / 2
	for _, k := range []int{rawK, resilientK, sdkK} {
		run(k, half)
	}
	for _, k := range []int{sdkK, resilientK, rawK} {
		run(k, b.N-half)
	}
	b.StopTimer()
	per := func(v float64) float64 { return v / float64(b.N) }
	cpu := func(k int) float64 { return per(float64(cost[k].cpu)) }
	wall := func(k int) float64 { return per(float64(cost[k].wall)) }
	b.ReportMetric(cpu(resilientK), "cpu-ns/call")
	b.ReportMetric(cpu(rawK), "raw-cpu-ns/call")
	b.ReportMetric(cpu(sdkK), "gosdk-cpu-ns/call")
	b.ReportMetric(cpu(resilientK)/cpu(rawK), "cpu-x-raw")
	b.ReportMetric(cpu(sdkK)/cpu(rawK), "gosdk-cpu-x-raw")
	b.ReportMetric(wall(resilientK), "wall-ns/call")
	b.ReportMetric(wall(rawK), "raw-wall-ns/call")
	b.ReportMetric(wall(resilientK)/wall(rawK), "wall-x-raw")
	b.ReportMetric(wall(sdkK)/wall(rawK), "gosdk-wall-x-raw")
	b.ReportMetric(per(float64(cost[resilientK].allocs)), "allocs/call")
	b.ReportMetric(per(float64(cost[rawK].allocs)), "raw-allocs/call")
	b.ReportMetric(per(float64(cost[sdkK].allocs)), "gosdk-allocs/call")
	b.ReportMetric(per(float64(cost[resilientK].bytes)), "B/call")
	b.ReportMetric(per(float64(cost[rawK].bytes)), "raw-B/call")
	b.ReportMetric(per(float64(cost[sdkK].bytes)), "gosdk-B/call")
}
