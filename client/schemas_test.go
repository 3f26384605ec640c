package client

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// A tool's schemas reach the caller as the server sent them, every keyword
// of JSON Schema 2020-12 kept, from every listing method and in the tools
// the client lists itself for the replay decision; a schema mcp-go's typed
// one holds whole stays typed.
func TestToolSchemasAsTheServerSentThem(t *testing.T) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		t.Run(era.String(), func(t *testing.T) {
			srv := startServer(t, testserver.Config{Era: era, SchemaTools: true, PageSize: 3})
			c := newClient(t, srv.URL())
			ctx := testContext(t)

			// Before any listing of the caller's: the client's own, for a
			// replay decision.
			if err := c.listings.LearnTools(ctx); err != nil {
				t.Fatal(err)
			}
			cached, ok, _ := c.listings.KnownTool("shape")
			if !ok {
				t.Fatal("shape not in the client's tool cache")
			}
			checkShape(t, "the tool cache", cached)

			listed, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			checkTools(t, "ListTools", listed.Tools)

			var iterated []mcp.Tool
			for tool, err := range c.IterTools(ctx, mcp.ListToolsRequest{}) {
				if err != nil {
					t.Fatal(err)
				}
				iterated = append(iterated, tool)
			}
			checkTools(t, "IterTools", iterated)

			var paged []mcp.Tool
			req := mcp.ListToolsRequest{}
			for range 20 {
				page, err := c.ListToolsByPage(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				paged = append(paged, page.Tools...)
				if page.NextCursor == "" {
					break
				}
				req.Params.Cursor = page.NextCursor
			}
			checkTools(t, "ListToolsByPage", paged)
		})
	}
}

func checkTools(t *testing.T, how string, tools []mcp.Tool) {
	t.Helper()
	var shape, echo *mcp.Tool
	for i := range tools {
		switch tools[i].Name {
		case "shape":
			shape = &tools[i]
		case "echo":
			echo = &tools[i]
		}
	}
	if shape == nil || echo == nil {
		t.Fatalf("%s: shape or echo not listed", how)
	}
	checkShape(t, how, *shape)
	if echo.RawInputSchema != nil || echo.InputSchema.Type != "object" || echo.InputSchema.Properties["text"] == nil {
		t.Errorf("%s: echo's schema, which mcp-go's typed one holds whole, is not typed: %+v, raw %s", how, echo.InputSchema, echo.RawInputSchema)
	}
}

func checkShape(t *testing.T, how string, tool mcp.Tool) {
	t.Helper()
	if err := sameSchema(tool.RawInputSchema, testserver.ShapeInputSchema); err != nil {
		t.Errorf("%s: shape's input schema: %v", how, err)
	}
	if err := sameSchema(tool.RawOutputSchema, testserver.ShapeOutputSchema); err != nil {
		t.Errorf("%s: shape's output schema: %v", how, err)
	}
	if tool.InputSchema.Type != "" || tool.OutputSchema.Type != "" {
		t.Errorf("%s: shape has a typed schema beside its raw one; it cannot be marshalled", how)
	}
	// The tool as a whole says what the server said: what an agent hands
	// its model.
	raw, err := json.Marshal(tool)
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	var got struct{ InputSchema, OutputSchema json.RawMessage }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if err := sameSchema(got.InputSchema, testserver.ShapeInputSchema); err != nil {
		t.Errorf("%s: shape marshalled: input schema: %v", how, err)
	}
	if err := sameSchema(got.OutputSchema, testserver.ShapeOutputSchema); err != nil {
		t.Errorf("%s: shape marshalled: output schema: %v", how, err)
	}
}

func sameSchema(got json.RawMessage, want string) error {
	if got == nil {
		return fmt.Errorf("none, want %s", want)
	}
	if !sameJSON(json.RawMessage(want), got) {
		return fmt.Errorf("%s, want %s", got, want)
	}
	return nil
}
