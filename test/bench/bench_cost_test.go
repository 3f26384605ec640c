package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkCallAlone is one client alone in the process, calling echo over
// the given number of goroutines: a ResilientClient (pool of 1, keepalive
// on) or raw mcp-go on an http.Client like the ResilientClient's own. It is
// for profiles (-cpuprofile, -memprofile, -mutexprofile, -blockprofile) of
// one client's calls with nothing else in them; its ns/op is one call's,
// the server's work included. For comparisons in one run, see
// BenchmarkCallLatency, BenchmarkThroughput and BenchmarkCallCost.
//
//	go test -run '^$' -bench 'BenchmarkCallAlone/era=SessionEra/goroutines=256/client=resilient' -cpuprofile cpu.out -mutexprofile mutex.out ./test/bench
func BenchmarkCallAlone(b *testing.B) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		for _, goroutines := range []int{1, 256} {
			for _, name := range []string{"resilient", "raw"} {
				b.Run(fmt.Sprintf("era=%s/goroutines=%d/client=%s", era, goroutines, name), func(b *testing.B) {
					srv, err := testserver.Start(testserver.Config{Era: era})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(srv.Close) // after the raw client's cleanup
					var call callFunc
					if name == "raw" {
						hc := likeResilientHTTPClient()
						defer hc.CloseIdleConnections()
						call = rig.RawClient(b, srv.URL(), transport.WithHTTPBasicClient(hc)).CallTool
					} else {
						rc, err := client.New(srv.URL(), client.WithKeepAlive(30*time.Second))
						if err != nil {
							b.Fatal(err)
						}
						defer rc.Close()
						if _, err := rc.Initialize(context.Background(), rig.BenchInit()); err != nil {
							b.Fatal(err)
						}
						call = rc.CallTool
					}
					callsTake(b, 200, goroutines, call) // warm: connections, caches
					b.ReportAllocs()
					b.ResetTimer()
					callsTake(b, b.N, goroutines, call)
				})
			}
		}
	}
}

// BenchmarkCallCost compares sequential echo calls through a
// ResilientClient (keepalive on, 30s) and raw mcp-go on an http.Client
// like the ResilientClient's own, on the same in-process server in the
// same run, two ways:
//
//   - order=blocks: each client makes a quarter of the calls in a row, in
//     the order raw, resilient, resilient, raw (so that drift in the
//     machine's speed falls on both alike): what a program that uses one
//     client sees, the figure BENCHMARKS.md publishes;
//   - order=interleaved: the clients take turns every 16 calls, as
//     BenchmarkCallLatency has them (with go-sdk's client and the net/http
//     floor between them there): each run of 16 starts on caches, branch
//     predictors and a scheduler the other client left.
//
// Reported: ns/call and raw-ns/call, x-raw (the time ratio), and
// cpu-x-raw, the ratio of the process's CPU time (getrusage, user and
// system, the server's included) spent during each client's calls, which
// other processes on the machine disturb less than wall time.
func BenchmarkCallCost(b *testing.B) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		for _, order := range []string{"blocks", "interleaved"} {
			b.Run(fmt.Sprintf("era=%s/order=%s", era, order), func(b *testing.B) {
				benchCallCost(b, era, order == "interleaved")
			})
		}
	}
}

func benchCallCost(b *testing.B, era testserver.Era, interleaved bool) {
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close) // after the raw client's cleanup
	hc := likeResilientHTTPClient()
	defer hc.CloseIdleConnections()
	raw := rig.RawClient(b, srv.URL(), transport.WithHTTPBasicClient(hc))
	rc, err := client.New(srv.URL(), client.WithKeepAlive(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	clients := [2]callFunc{raw.CallTool, rc.CallTool} // raw, resilient
	var spent, cpu [2]time.Duration
	run := func(k, n int) {
		c0, t0 := processCPU(), time.Now()
		for range n {
			if _, err := clients[k](context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
		spent[k] += time.Since(t0)
		cpu[k] += processCPU() - c0
	}
	for k := range clients { // warm: connections, caches
		run(k, 100)
	}
	spent, cpu = [2]time.Duration{}, [2]time.Duration{}
	b.ResetTimer()
	if interleaved {
		const turn = 16
		for i := 0; i < b.N; i += turn {
			n := min(turn, b.N-i)
			first := i / turn % 2 // each goes first every other turn
			run(first, n)
			run(1-first, n)
		}
	} else {
		quarter := b.N / 4
		for _, k := range []int{0, 1, 1, 0} {
			run(k, quarter)
		}
		run(0, b.N-2*quarter)
		run(1, b.N-2*quarter)
	}
	b.StopTimer()
	perCall := func(d time.Duration) float64 { return float64(d) / float64(b.N) }
	b.ReportMetric(perCall(spent[1]), "ns/call")
	b.ReportMetric(perCall(spent[0]), "raw-ns/call")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "x-raw")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-x-raw")
}
