package rig

import (
	"context"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchInit is the initialize request of both clients: in the stateless era
// the client info goes with every request, so it must be the same size.
func BenchInit() mcp.InitializeRequest {
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "0"}
	return req
}

// RawClient is raw mcp-go's client of url, started and initialized with
// BenchInit, closed when the benchmark ends.
func RawClient(b *testing.B, url string, opts ...transport.StreamableHTTPCOption) *mcpclient.Client {
	b.Helper()
	raw, err := mcpclient.NewStreamableHttpClient(url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	if err := raw.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Initialize(context.Background(), BenchInit()); err != nil {
		b.Fatal(err)
	}
	return raw
}
