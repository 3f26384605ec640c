package resilientmcp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// BenchmarkCallAlone is one client alone in the process, calling echo over
// the given number of goroutines: a ResilientClient (pool of 1, keepalive
// on) or raw mcp-go on an http.Client like the ResilientClient's own. It is
// for profiles (-cpuprofile, -memprofile, -mutexprofile, -blockprofile) of
// one client's calls with nothing else in them; its ns/op is one call's,
// the server's work included. For comparisons in one run, see
// BenchmarkCallLatency, BenchmarkThroughput and BenchmarkCallCost.
//
//	go test -run '^$' -bench 'BenchmarkCallAlone/era=SessionEra/goroutines=256/client=resilient' -cpuprofile cpu.out -mutexprofile mutex.out .
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
						call = rawClient(b, srv.URL(), transport.WithHTTPBasicClient(hc)).CallTool
					} else {
						rc, err := client.New(srv.URL(), client.WithKeepAlive(30*time.Second))
						if err != nil {
							b.Fatal(err)
						}
						defer rc.Close()
						if _, err := rc.Initialize(context.Background(), benchInit()); err != nil {
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
