// Command conformance is an MCP client built on ResilientClient, for every
// client scenario of the official MCP conformance suite:
//
//	go build -o /tmp/mcp-conformance ./examples/conformance
//	conformance/referee.sh /tmp/mcp-conformance
//
// The suite passes the server's URL as the last argument, and the
// scenario's name in MCP_CONFORMANCE_SCENARIO. As the suite's own reference
// client does, the name picks one thing only: the auth/* scenarios
// authorize with WithOAuth (oauth.go), the others go without. Every
// behaviour a scenario checks is the library's.
//
// Without OAuth, the client does what any agent would: it initializes, lists the
// tools, and calls each one with arguments made up from its input schema.
// It accepts every elicitation without filling in anything, so the form's
// defaults are what the server gets (SEP-1034: the library fills them in),
// and answers sampling with a fixed text. It exits non-zero only if it
// could not initialize or list the tools, or the client closed under a
// call: a tool's own failure is the scenario's to judge.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance [flags ignored] SERVER_URL")
		os.Exit(2)
	}
	run := run
	if strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/") {
		run = runOAuth
	}
	if err := run(os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}

func run(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	c, err := client.New(url,
		client.WithClientInfo(mcp.Implementation{Name: "resilientmcp-conformance", Version: "1.0.0"}),
		client.WithClientOptions(
			mcpclient.WithElicitationHandler(acceptAsIs{}),
			mcpclient.WithSamplingHandler(fixedAnswer{}),
		),
		client.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))),
	)
	if err != nil {
		return err
	}
	defer c.Close()

	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "resilientmcp-conformance", Version: "1.0.0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	fmt.Fprintf(os.Stderr, "initialized: %s %s, protocol %s\n", res.ServerInfo.Name, res.ServerInfo.Version, res.ProtocolVersion)

	var tools []mcp.Tool
	for tool, err := range c.IterTools(ctx, mcp.ListToolsRequest{}) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, tool)
	}
	for _, tool := range tools {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool.Name
		req.Params.Arguments = arguments(tool.InputSchema)
		out, err := c.CallTool(ctx, req)
		var text string
		if err == nil && len(out.Content) > 0 {
			if t, ok := out.Content[0].(mcp.TextContent); ok {
				text = t.Text
			}
		}
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "tools/call %s: %v\n", tool.Name, err)
		case out.IsError:
			fmt.Fprintf(os.Stderr, "tools/call %s: the tool failed: %s\n", tool.Name, text)
		default:
			fmt.Fprintf(os.Stderr, "tools/call %s: %s\n", tool.Name, text)
		}
		if errors.Is(err, client.ErrClosed) {
			return err
		}
	}
	return nil
}

// arguments makes up a value for each property of a tool's input schema.
func arguments(schema mcp.ToolInputSchema) map[string]any {
	args := map[string]any{}
	names := make([]string, 0, len(schema.Properties))
	for name := range schema.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		prop, _ := schema.Properties[name].(map[string]any)
		if def, ok := prop["default"]; ok {
			args[name] = def
			continue
		}
		switch prop["type"] {
		case "number", "integer":
			args[name] = i + 1
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			if enum, ok := prop["enum"].([]any); ok && len(enum) > 0 {
				args[name] = enum[0]
			} else {
				args[name] = "test"
			}
		}
	}
	return args
}

// acceptAsIs accepts every elicitation and fills in nothing, as a user who
// submits a form as it is shown: the form's defaults are the answer.
type acceptAsIs struct{}

func (acceptAsIs) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	fmt.Fprintf(os.Stderr, "elicitation: %q accepted as shown\n", req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: map[string]any{},
	}}, nil
}

// fixedAnswer answers every sampling request with the same text.
type fixedAnswer struct{}

func (fixedAnswer) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("ok")},
		Model:           "none",
		StopReason:      "endTurn",
	}, nil
}
