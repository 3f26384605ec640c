package client

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkCallPathParallel is BenchmarkCallPath from 256 goroutines at
// once (128 per GOMAXPROCS on the 2-core machine BENCHMARKS.md describes):
// what the call path's shared state (the pool, the retry budget, the
// counters, the shared deadline) costs when every call contends for it.
func BenchmarkCallPathParallel(b *testing.B) {
	c := benchClient(b)
	nothing := func(context.Context, *session) error { return nil }
	b.ReportAllocs()
	b.SetParallelism(max(1, 256/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.do(context.Background(), "tools/call", "increment", nothing); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCallPathOptions is BenchmarkCallPath with call options on the
// context: what the client itself does for them, beside the call path.
// options=progress follows the call's progress, whose token goes in as
// its requests go out (RewriteRequest); the send here sends none.
func BenchmarkCallPathOptions(b *testing.B) {
	c := benchClient(b)
	base, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, v := range []struct {
		name string
		ctx  context.Context
	}{
		{"none", base},
		{"flags", WithCallOptions(base, SafeToRepeat(), FailFast())},
		{"progress", WithCallOptions(base, ProgressTimeout(time.Minute), OnProgress(func(mcp.ProgressNotification) {}))},
		{"timeout", WithCallOptions(base, ProgressTimeout(time.Minute))},
	} {
		b.Run("options="+v.name, func(b *testing.B) {
			send := func(context.Context, *session) error { return nil }
			b.ReportAllocs()
			for b.Loop() {
				if err := c.do(v.ctx, "tools/call", "increment", send); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
