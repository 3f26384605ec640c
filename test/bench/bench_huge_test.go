package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/hostile"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkHugeAnswer is F19 against raw mcp-go: a 200 MB answer to a call
// with a 5s deadline, as JSON and as one SSE event. It reports how long the
// call took, how far the heap grew while it ran, and how many calls
// returned the answer (raw mcp-go's JSON decoding does, after the
// deadline). A raw iteration takes 5 to 12 seconds, and its SSE decoding
// goes on for up to a minute after the call returned: -short skips them.
func BenchmarkHugeAnswer(b *testing.B) {
	for _, f := range rig.Framings {
		for _, raw := range []bool{true, false} {
			name := f.Name + "/resilientmcp"
			if raw {
				name = f.Name + "/raw"
			}
			b.Run(name, func(b *testing.B) {
				if raw && testing.Short() {
					b.Skip("raw mcp-go reads all 200 MB")
				}
				srv := hostile.New(hostile.Huge(200<<20, f.SSE))
				b.Cleanup(srv.Close) // after the clients' cleanups
				var call func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
				if raw {
					// Raw mcp-go keeps decoding a huge SSE event on a
					// goroutine of its own after the call returned: wait
					// for it (bounded), lest it be measured with the next
					// benchmark.
					before := runtime.NumGoroutine()
					b.Cleanup(func() {
						for i := 0; i < 600 && runtime.NumGoroutine() > before; i++ {
							time.Sleep(100 * time.Millisecond)
						}
					})
					call = rig.RawClient(b, srv.URL).CallTool
				} else {
					c, err := client.New(srv.URL)
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					if _, err := c.Initialize(context.Background(), rig.BenchInit()); err != nil {
						b.Fatal(err)
					}
					call = c.CallTool
				}
				var took time.Duration
				var grew, answered uint64
				for b.Loop() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					peak := rig.HeapPeak(b)
					start := time.Now()
					if _, err := call(ctx, rig.ToolRequest("echo", nil)); err == nil {
						answered++
					}
					took += time.Since(start)
					grew = max(grew, peak())
					cancel()
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/call")
				b.ReportMetric(float64(grew)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(answered)/float64(b.N), "answered/call")
			})
		}
	}
}
