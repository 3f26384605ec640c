package client

import (
	"context"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/hotpath"
)

// A plain tools/call over Streamable HTTP is written and read by the
// client itself (issue 46): client/internal/hotpath, which says when it
// takes a call over and why. What stays here joins it to the session.

// newHotPath returns what a session over tr, sending with hc, writes into
// the calls it takes over; nil if mcp-go writes them: the caller's
// options for mcp-go's client (WithClientOptions can add handlers,
// tracers, propagators of _meta) are not the hot path's.
func newHotPath(c *ResilientClient, tr *discoverRecorder, hc *http.Client) *hotpath.Writer {
	if len(c.opts.clientOptions) > 0 || c.elicitationDefaults {
		return nil
	}
	return hotpath.NewWriter(hotTransport{tr}, hc)
}

// callToolHot makes one attempt of req on s as the hot path writes it;
// false: mcp-go's CallTool makes it (hotpath.Writer.Call).
func callToolHot(ctx context.Context, c *ResilientClient, s *session, req *mcp.CallToolRequest) (*mcp.CallToolResult, bool, error) {
	if s.hot == nil {
		return nil, false, nil
	}
	return s.hot.Call(ctx, &hotpath.Session{
		MCP:             s.mc,
		SessionEra:      s.sessionEra,
		Version:         s.version,
		Init:            s.request,
		Done:            s.ctx,
		Endpoint:        c.endpoint,
		Headers:         c.opts.headers,
		HeaderFunc:      c.opts.headerFunc,
		ParserFallbacks: &c.stats.ParserFallbacks,
	}, req)
}

// levelSet notes that s's mcp-go client was given a logging level.
func (s *session) levelSet(level mcp.LoggingLevel) { s.hot.LevelSet(level) }

// hotTransport is the session's transport as the hot path reads it
// (hotpath.Transport).
type hotTransport struct{ t *discoverRecorder }

func (h hotTransport) GetSessionId() string  { return h.t.GetSessionId() }
func (h hotTransport) DeclaresVersion() bool { return h.t.versions.declared.Load() != nil }
func (h hotTransport) WithParamHeaders(req transport.JSONRPCRequest, replace bool) (transport.JSONRPCRequest, bool) {
	return h.t.withParamHeaders(req, replace)
}
