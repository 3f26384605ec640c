package sse_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// TestSSEBroadcastingGateway: supergateway 4.0.0 sends every message its
// child writes to every open stream, so each client reads every other
// client's answers, with the ids they chose. Two resilient clients, 4
// goroutines each, calling at once through it: every call gets its own
// answer, and the others' are dropped and counted. Two raw mcp-go SSE
// clients in the same run, both counting ids 1, 2, 3, are the contrast:
// the answers they get that were another call's are logged, not asserted
// (how many depends on timing).
func TestSSEBroadcastingGateway(t *testing.T) {
	s := startServer(t, "supergateway")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var resilient []*client.ResilientClient
	for range 2 {
		c, err := client.NewSSE(s.url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			t.Fatal(err)
		}
		resilient = append(resilient, c)
	}
	var raw []*mcpclient.Client
	for range 2 {
		c, err := mcpclient.NewSSEMCPClient(s.url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			t.Logf("raw mcp-go's initialize: %v", err)
		}
		raw = append(raw, c)
	}
	const perGoroutine = 25
	var wg sync.WaitGroup
	var ours, rawWrong, rawFailed atomic.Int64
	call := func(name string, f func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error), g int, wrong *atomic.Int64, failed func(error)) {
		defer wg.Done()
		for i := range perGoroutine {
			req, want := s.echo(fmt.Sprintf("%s-%d-%d", name, g, i))
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := f(cctx, req)
			cancel()
			switch {
			case err != nil:
				failed(err)
			case text(res) != want:
				wrong.Add(1)
			}
		}
	}
	for k, c := range resilient {
		for g := range 4 {
			wg.Add(1)
			go call(fmt.Sprintf("r%d", k), c.CallTool, g, &ours, func(err error) { t.Errorf("resilient client %d: %v", k, err) })
		}
	}
	for k, c := range raw {
		for g := range 4 {
			wg.Add(1)
			go call(fmt.Sprintf("m%d", k), c.CallTool, g, &rawWrong, func(error) { rawFailed.Add(1) })
		}
	}
	wg.Wait()
	if n := ours.Load(); n != 0 {
		t.Errorf("%d of the resilient clients' calls got another call's answer", n)
	}
	var dropped uint64
	for _, c := range resilient {
		dropped += c.Stats().WrongAnswers
	}
	if dropped == 0 {
		t.Error("no answer of another client was dropped: the gateway did not broadcast")
	}
	t.Logf("resilient: %d calls, 0 wrong, %d others' answers dropped; raw mcp-go: %d calls, %d answered with another call's answer, %d failed",
		2*4*perGoroutine, dropped, 2*4*perGoroutine, rawWrong.Load(), rawFailed.Load())
}
