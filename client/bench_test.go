package client

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// BenchmarkCallPath is the cost of the call path alone: everything a call
// does around mcp-go (session lease, health bookkeeping, budget, call
// timeout, the exchange that records HTTP outcomes), with a send that does
// nothing. BenchmarkCallLatency in test/bench measures it end to end.
func BenchmarkCallPath(b *testing.B) {
	c := benchClient(b)
	nothing := func(context.Context, *session) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := c.do(context.Background(), "tools/call", "increment", nothing); err != nil {
			b.Fatal(err)
		}
	}
}

// benchClient is a client with a session on an in-process server of the
// session era, both closed when b ends.
func benchClient(b *testing.B) *ResilientClient {
	b.Helper()
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	c, err := New(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		b.Fatal(err)
	}
	return c
}
