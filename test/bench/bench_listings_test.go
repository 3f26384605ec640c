package bench

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkListTools compares a listing by raw mcp-go (a request to a live
// server on loopback) with ResilientClient's answered from its cache:
// within the server's ttlMs ("cached"), and with the server killed and the
// breaker open ("stale", F48), where no request is attempted. Compare the
// ns/op of the three as ratios.
func BenchmarkListTools(b *testing.B) {
	cfg := testserver.Config{Era: testserver.StatelessEra, CacheTTLMs: 3_600_000, CacheScope: mcp.CacheScopePublic}
	b.Run("mcp-go", func(b *testing.B) {
		srv, err := testserver.Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		raw := rig.RawClient(b, srv.URL())
		for b.Loop() {
			if _, err := raw.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		srv, err := testserver.Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		c := listingClient(b, srv.URL())
		for b.Loop() {
			if _, err := c.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
				b.Fatal(err)
			}
		}
		if n := srv.RPCs("tools/list"); n != 1 {
			b.Fatalf("%d tools/list sent, want 1", n)
		}
	})
	b.Run("stale", func(b *testing.B) {
		srv, err := testserver.Start(testserver.Config{Era: testserver.StatelessEra})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		c := listingClient(b, srv.URL(), client.WithFailFastAfter(time.Millisecond))
		srv.Stop()
		waitFor(b, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			_ = c.Ping(ctx)
			return c.Stats().FailingFast
		})
		for b.Loop() {
			res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				b.Fatal(err)
			}
			if _, stale := client.Stale(res.Meta); !stale {
				b.Fatal("not stale")
			}
		}
	})
}

// listingClient is a ResilientClient of url that has listed its tools once.
func listingClient(b *testing.B, url string, opts ...client.Option) *client.ResilientClient {
	b.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
		b.Fatal(err)
	}
	return c
}
