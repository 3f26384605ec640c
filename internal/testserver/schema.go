package testserver

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ShapeInputSchema and ShapeOutputSchema are the schemas of the tool shape
// (Config.SchemaTools), as the server sends them: JSON Schema 2020-12 with
// keywords mcp-go's typed schema has no field for ($schema, $anchor,
// allOf, if/then/else, a boolean schema), so that a client that decodes
// them into it loses them.
const (
	ShapeInputSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
		`"$defs":{"point":{"$anchor":"point","type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},` +
		`"properties":{"kind":{"type":"string","enum":["circle","square"]},"at":{"$ref":"#point"},"size":{"type":"number","exclusiveMinimum":0}},` +
		`"required":["kind"],"additionalProperties":false,` +
		`"allOf":[{"required":["at"]}],` +
		`"if":{"properties":{"kind":{"const":"circle"}}},"then":{"required":["size"]},"else":true}`
	ShapeOutputSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
		`"properties":{"area":{"type":"number","minimum":0}},"required":["area"],"additionalProperties":false,` +
		`"unevaluatedProperties":false}`
)

// addSchemaTool registers shape: read-only and idempotent, it answers
// {"area":0} whatever it is given.
func addSchemaTool(s *Server, m *server.MCPServer) {
	tool := mcp.NewToolWithRawSchema("shape", "Describes a shape; its schemas use JSON Schema 2020-12.", json.RawMessage(ShapeInputSchema))
	tool.RawOutputSchema = json.RawMessage(ShapeOutputSchema)
	tool.Annotations = mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true), IdempotentHint: mcp.ToBoolPtr(true)}
	m.AddTool(tool, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.counters.add(&s.counters.tools, "shape")
		return mcp.NewToolResultStructured(map[string]any{"area": 0}, `{"area":0}`), nil
	})
}

// addHeaderTool registers route, whose region argument travels in the
// Mcp-Param-Region header too (x-mcp-header, SEP-2243): on 2026-07-28
// mcp-go refuses a call whose headers do not match its arguments. It is
// neither read-only nor idempotent, and answers the region it was given.
func addHeaderTool(s *Server, m *server.MCPServer) {
	schema := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"note":{"type":"string"}},"required":["region"]}`
	tool := mcp.NewToolWithRawSchema("route", "Answers the region it was routed by.", json.RawMessage(schema))
	tool.Annotations = mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(false), IdempotentHint: mcp.ToBoolPtr(false)}
	m.AddTool(tool, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.counters.add(&s.counters.tools, "route")
		return mcp.NewToolResultText(req.GetString("region", "")), nil
	})
}
