package gosdkserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools are ours, written with go-sdk's API as any author of a go-sdk
// server would; each counts its executions.
type (
	echoIn struct {
		Text string `json:"text"`
	}
	incrementIn struct {
		// ID, if set, is counted on its own (RunsOf), so a test can tell
		// which call ran twice.
		ID string `json:"id,omitempty"`
	}
	longIn struct {
		// Millis is how long the call runs, 1500 if unset; it reports
		// progress every 100ms.
		Millis int `json:"millis,omitempty"`
	}
)

func (s *Server) newMCPServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gosdkserver", Version: "0"}, &mcp.ServerOptions{
		// Subscriptions are the SDK's: it keeps them per session and
		// ResourceUpdated notifies the subscribers.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			s.ran("echo", "")
			return text(in.Text), nil, nil
		})
	// No annotations: neither read-only nor idempotent, never replayed.
	mcp.AddTool(srv, &mcp.Tool{Name: "increment", Description: "counts its executions"},
		func(_ context.Context, _ *mcp.CallToolRequest, in incrementIn) (*mcp.CallToolResult, any, error) {
			s.ran("increment", in.ID)
			return text("incremented"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "long", Description: "runs a while, reporting progress", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, in longIn) (*mcp.CallToolResult, any, error) {
			s.ran("long", "")
			d := time.Duration(in.Millis) * time.Millisecond
			if d <= 0 {
				d = 1500 * time.Millisecond
			}
			const step = 100 * time.Millisecond
			steps := int(d / step)
			token := req.Params.GetProgressToken()
			for i := 1; i <= steps; i++ {
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(step):
				}
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(steps)})
				}
			}
			return text(fmt.Sprintf("long done after %d steps", steps)), nil, nil
		})
	srv.AddResource(&mcp.Resource{URI: CounterURI, Name: "counter", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: CounterURI, MIMEType: "text/plain", Text: "counter"}}}, nil
		})
	return srv
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
