package rig

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// Framings are the two ways a hostile server frames its answer: one JSON
// body, or one SSE event.
var Framings = []struct {
	Name string
	SSE  bool
}{{"json", false}, {"sse", true}}

// HeapPeak samples the live heap until stopped, and reports its highest
// point above what it was at the start (after a GC).
func HeapPeak(t testing.TB) (stop func() uint64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var (
		wg   sync.WaitGroup
		peak uint64
		done = make(chan struct{})
	)
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		peak = max(peak, read())
		if peak < base {
			return 0
		}
		return peak - base
	}
}
