package testserver

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ProfileSchema is the form the profile tool asks the client's user to
// fill in: every field has a default (SEP-1034).
var ProfileSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":     map[string]any{"type": "string", "default": "John Doe"},
		"age":      map[string]any{"type": "integer", "default": 30},
		"score":    map[string]any{"type": "number", "default": 95.5},
		"status":   map[string]any{"type": "string", "enum": []any{"active", "inactive"}, "default": "active"},
		"verified": map[string]any{"type": "boolean", "default": true},
	},
}

// profileTool asks the client to elicit ProfileSchema and answers with the
// content the client sent back, as JSON (or the action, if not accepted).
// It is written as a multi round-trip handler, which mcp-go serves in both
// eras: as input requests in the stateless era, and as a server-initiated
// elicitation/create in the session era.
func profileTool() (mcp.Tool, server.ToolHandlerFunc) {
	tool := mcp.NewTool("profile", append(hints(false, false),
		mcp.WithDescription("Asks the user for a profile (elicitation) and returns what the client answered."))...)
	return tool, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if res := server.ElicitationResponse(req.Params.InputResponses, "profile"); res != nil {
			if res.Action != mcp.ElicitationResponseActionAccept {
				return mcp.NewToolResultText(string(res.Action)), nil
			}
			body, err := json.Marshal(res.Content)
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(string(body)), nil
		}
		return server.NewInputRequestBuilder("profile-state").Elicit("profile", mcp.ElicitationParams{
			Message:         "Your profile, please",
			RequestedSchema: ProfileSchema,
		}).ToolResult(), nil
	}
}
