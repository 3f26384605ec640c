package bench

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkSSECall is a call over the HTTP+SSE transport (2024-11-05):
// client.NewSSE against mcp-go's own SSE client (NewSSEMCPClient) on the
// same in-process mcp-go SSE server, in the same run, each with a
// deadline on its context. As BenchmarkCallLatency, the clients take turns
// in runs of 16 calls, in an order that changes from one iteration to the
// next. Allocation counts include the server's, the same for both.
func BenchmarkSSECall(b *testing.B) {
	m := server.NewMCPServer("bench-sse", "1", server.WithToolCapabilities(true))
	m.AddTool(mcp.NewTool("echo", mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: server.NewSSEServer(m)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/sse"

	raw, err := mcpclient.NewSSEMCPClient(url)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	if err := raw.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	rc, err := client.NewSSE(url, client.WithKeepAlive(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	const rawK, resilientK = 0, 1
	clients := []callFunc{rawK: raw.CallTool, resilientK: rc.CallTool}
	const run = 16
	order := [2][2]int{{0, 1}, {1, 0}}
	var spent [2]time.Duration
	for i := 0; b.Loop(); i++ {
		for _, k := range order[i%2] {
			for range run {
				spent[k] += timeCall(b, clients[k], req, true)
			}
		}
	}
	b.StopTimer()
	perCall := func(k int) float64 { return float64(spent[k]) / float64(b.N*run) }
	b.ReportMetric(perCall(resilientK), "ns/call")
	b.ReportMetric(perCall(rawK), "raw-ns/call")
	b.ReportMetric(perCall(resilientK)/perCall(rawK), "x-raw")
	allocs := func(k int) float64 {
		return testing.AllocsPerRun(200, func() { timeCall(b, clients[k], req, true) })
	}
	b.ReportMetric(allocs(resilientK), "allocs/call")
	b.ReportMetric(allocs(rawK), "raw-allocs/call")
}
