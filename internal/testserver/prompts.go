package testserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Prompts is the names of the prompts the server lists, in order.
var Prompts = []string{"greet", "summarize"}

// ResourceTemplates is the URI templates the server lists, in order.
var ResourceTemplates = []string{"test://item/{id}", "test://user/{name}"}

// addPromptsAndTemplates registers the prompts and resource templates, for
// tests of listings other than tools.
func addPromptsAndTemplates(m *server.MCPServer) {
	for _, name := range Prompts {
		m.AddPrompt(mcp.NewPrompt(name, mcp.WithPromptDescription("A "+name+" prompt.")),
			func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult(name, []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(name)),
				}), nil
			})
	}
	for _, tmpl := range ResourceTemplates {
		m.AddResourceTemplate(mcp.NewResourceTemplate(tmpl, tmpl),
			func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: req.Params.URI}}, nil
			})
	}
}
