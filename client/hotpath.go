package client

import (
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/hotpath"
)

// A plain tools/call over Streamable HTTP is written and read by the
// client itself (issue 46): client/internal/hotpath, which says when it
// takes a call over and why. What stays here joins it to the session;
// what a call runs of it (callToolHot, hotTransport) is in methods.go,
// beside CallTool.

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

// levelSet notes that s's mcp-go client was given a logging level.
func (s *session) levelSet(level mcp.LoggingLevel) { s.hot.LevelSet(level) }
