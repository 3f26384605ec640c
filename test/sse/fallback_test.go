package sse_test

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// TestSSEFallback: New with WithSSEFallback, given the URL of an HTTP+SSE
// server's stream, follows the specification's backwards-compatibility
// procedure (initialize POSTed, answered 4xx; a GET with an endpoint
// event) and speaks HTTP+SSE to it, across a restart too. Without the
// option, New's client fails at once with the server's answer, as for any
// endpoint that is not Streamable HTTP (F12).
func TestSSEFallback(t *testing.T) {
	for _, kind := range []string{"everything", "mcpgo", "gosdk"} {
		t.Run(kind, func(t *testing.T) {
			s := startServer(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			plain, err := client.New(s.url)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = plain.ListTools(ctx, mcp.ListToolsRequest{})
			plain.Close()
			if err == nil {
				t.Fatal("New without WithSSEFallback spoke to an HTTP+SSE server")
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("New without the fallback failed after %v: want at once", took)
			}
			t.Logf("without the fallback: %v", err)

			c, err := client.New(s.url, client.WithSSEFallback(), client.WithKeepAlive(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req, want := s.echo("fallback")
			res, err := c.CallTool(ctx, req)
			if err != nil || text(res) != want {
				t.Fatalf("with the fallback: %q, %v", text(res), err)
			}
			t.Logf("first call with the fallback after %v", time.Since(start))
			s.p.restart()
			start = time.Now()
			req, want = s.echo("after a restart")
			res, err = c.CallTool(ctx, req)
			if err != nil || text(res) != want {
				t.Fatalf("with the fallback, after a restart: %q, %v", text(res), err)
			}
			t.Logf("the call after the restart after %v", time.Since(start))
		})
	}
}
