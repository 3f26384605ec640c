package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sync"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go decodes a tool's inputSchema and outputSchema into its typed
// schema, which keeps type, properties, required, $defs and
// additionalProperties only: $schema, allOf, if/then/else, $anchor and
// every other keyword of JSON Schema 2020-12 are gone by the time a caller
// (or the replay decision) sees the tool, and an agent would hand its model
// a schema the server never published. The listings here keep the schemas
// as the server sent them: the session's transport reads them from the
// answer (send, version.go) into the listing's schemaSink, and restore puts
// them back. The client's stdio transport reads them too (KeepSchemas).

// ListTools is mc.ListTools with every tool's schemas as the server sent them.
func ListTools(ctx context.Context, mc *mcpclient.Client, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	ctx, sink := withSchemaSink(ctx)
	res, err := mc.ListTools(ctx, req)
	if err == nil {
		sink.restore(res.Tools)
	}
	return res, err
}

// ListToolsByPage is mc.ListToolsByPage with every tool's schemas as the
// server sent them.
func ListToolsByPage(ctx context.Context, mc *mcpclient.Client, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	ctx, sink := withSchemaSink(ctx)
	res, err := mc.ListToolsByPage(ctx, req)
	if err == nil {
		sink.restore(res.Tools)
	}
	return res, err
}

type schemaSinkKey struct{}

// schemaSink holds the schemas of the tools one listing was sent, by tool
// name. It is safe for concurrent use.
type schemaSink struct {
	mu    sync.Mutex // a leaf
	tools map[string]toolSchemas
}

type toolSchemas struct {
	input, output json.RawMessage // nil: the tool had none
}

func withSchemaSink(ctx context.Context) (context.Context, *schemaSink) {
	sink := &schemaSink{tools: map[string]toolSchemas{}}
	return context.WithValue(ctx, schemaSinkKey{}, sink), sink
}

// KeepSchemas records the schemas of a tools/list result in the sink of
// the listing ctx belongs to, if any.
func KeepSchemas(ctx context.Context, result json.RawMessage) {
	sink, _ := ctx.Value(schemaSinkKey{}).(*schemaSink)
	if sink == nil {
		return
	}
	var page struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &page) != nil {
		return // mcp-go fails the listing
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, t := range page.Tools {
		sink.tools[t.Name] = toolSchemas{input: schemaBytes(t.InputSchema), output: schemaBytes(t.OutputSchema)}
	}
}

// schemaBytes is a schema's bytes, nil if absent or null.
func schemaBytes(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

// restore gives each tool its schemas as the server sent them, where
// mcp-go's typed schema lost something of them: the server's bytes go in
// RawInputSchema (RawOutputSchema), and the typed schema is left empty, as
// mcp-go wants one or the other (Tool.MarshalJSON). A schema the typed one
// holds whole stays typed, as mcp-go gives it.
func (s *schemaSink) restore(tools []mcp.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range tools {
		t := &tools[i]
		sent, ok := s.tools[t.Name]
		if !ok {
			continue
		}
		if sent.input != nil && t.RawInputSchema == nil && !sameJSON(t.InputSchema, sent.input) {
			t.RawInputSchema, t.InputSchema = sent.input, mcp.ToolInputSchema{}
		}
		if sent.output != nil && t.RawOutputSchema == nil && !sameJSON(t.OutputSchema, sent.output) {
			t.RawOutputSchema, t.OutputSchema = sent.output, mcp.ToolOutputSchema{}
		}
	}
}

// sameJSON reports whether typed encodes to the JSON value raw holds,
// numbers compared as written.
func sameJSON(typed any, raw json.RawMessage) bool {
	enc, err := json.Marshal(typed)
	if err != nil {
		return false
	}
	a, okA := decodeNumbers(enc)
	b, okB := decodeNumbers(raw)
	return okA && okB && reflect.DeepEqual(a, b)
}

func decodeNumbers(raw []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}
