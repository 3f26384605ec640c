package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// BenchmarkFleetCallTool is what routing costs: sequential echo calls
// through the fleet ("fleet": the name looked up, the tool's own name put
// back, FailFast, the answer returned) and through the same server's client
// directly ("client": f.Client("s"), so that the one difference is the
// fleet's), on one in-process mcp-go server, in the same run, taking turns
// every 64 calls so that drift in the machine falls on both alike. Reported
// as ns/op of each, and x-client: the fleet's time over the client's.
func BenchmarkFleetCallTool(b *testing.B) {
	srv, err := testserver.Start(testserver.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	f, err := New(Config{Servers: map[string]ServerConfig{"s": {URL: srv.URL()}}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := f.Start(ctx); err != nil {
		b.Fatal(err)
	}
	c, _ := f.Client("s")
	direct := mcp.CallToolRequest{}
	direct.Params.Name, direct.Params.Arguments = "echo", map[string]any{"text": "hi"}
	routed := direct
	routed.Params.Name = "s__echo"
	viaClient := func() {
		if _, err := c.CallTool(client.WithCallOptions(ctx, client.FailFast()), direct); err != nil {
			b.Fatal(err)
		}
	}
	viaFleet := func() {
		if _, err := f.CallTool(ctx, routed); err != nil {
			b.Fatal(err)
		}
	}
	viaClient() // warm both
	viaFleet()
	const turn = 64
	var tClient, tFleet time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += turn {
		n := min(turn, b.N-done)
		t0 := time.Now()
		for range n {
			viaClient()
		}
		t1 := time.Now()
		for range n {
			viaFleet()
		}
		tClient, tFleet = tClient+t1.Sub(t0), tFleet+time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(tClient.Nanoseconds())/float64(b.N), "client-ns/call")
	b.ReportMetric(float64(tFleet.Nanoseconds())/float64(b.N), "fleet-ns/call")
	b.ReportMetric(float64(tFleet)/float64(tClient), "x-client")
}

// BenchmarkFleetRoute is the fleet's own part of a call, without I/O: the
// name looked up and the server's client found.
func BenchmarkFleetRoute(b *testing.B) {
	f, err := New(Config{Servers: map[string]ServerConfig{"s": {URL: "http://127.0.0.1:1/mcp"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m := f.members["s"]
	m.listed = make([]mcp.Tool, 50)
	for i := range m.listed {
		m.listed[i].Name = "tool" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	m.ready = true
	f.rebuild()
	b.ReportAllocs()
	for b.Loop() {
		f.mu.Lock()
		k, ok := f.routes["s__toolka"]
		f.mu.Unlock()
		if !ok || k.server != "s" {
			b.Fatal("no route")
		}
	}
}
