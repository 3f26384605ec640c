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
// tools, and calls each one with arguments made up from its input schema,
// or makes the tool calls the suite's context names (MCP_CONFORMANCE_CONTEXT's
// toolCalls), with their arguments as given. A tool that takes a schema
// object is handed the input schema the client saw of the other tool it
// lists, verbatim, so that the server sees what the client kept of it.
// It accepts every elicitation without filling in anything, so the form's
// defaults are what the server gets (SEP-1034: the library fills them in),
// and answers sampling with a fixed text. It exits non-zero only if it
// could not initialize or list the tools, or the client closed under a
// call: a tool's own failure is the scenario's to judge.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"

	"github.com/resilientmcp/resilientmcp/examples/conformance/internal/user"
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
			mcpclient.WithElicitationHandler(user.AcceptAsIs{}),
			mcpclient.WithSamplingHandler(user.FixedAnswer{}),
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
	calls, err := contextCalls()
	if err != nil {
		return err
	}
	if calls == nil {
		for _, tool := range tools {
			calls = append(calls, toolCall{Name: tool.Name, Arguments: arguments(tool, tools)})
		}
	}
	for _, call := range calls {
		req := mcp.CallToolRequest{}
		req.Params.Name = call.Name
		req.Params.Arguments = call.Arguments
		out, err := c.CallTool(ctx, req)
		var text string
		if err == nil && len(out.Content) > 0 {
			if t, ok := out.Content[0].(mcp.TextContent); ok {
				text = t.Text
			}
		}
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "tools/call %s: %v\n", call.Name, err)
		case out.IsError:
			fmt.Fprintf(os.Stderr, "tools/call %s: the tool failed: %s\n", call.Name, text)
		default:
			fmt.Fprintf(os.Stderr, "tools/call %s: %s\n", call.Name, text)
		}
		if errors.Is(err, client.ErrClosed) {
			return err
		}
	}
	return nil
}

type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// contextCalls are the tool calls the suite's context names, nil if none.
// Numbers are kept as written.
func contextCalls() ([]toolCall, error) {
	raw := os.Getenv("MCP_CONFORMANCE_CONTEXT")
	if raw == "" {
		return nil, nil
	}
	var ctx struct {
		ToolCalls []toolCall `json:"toolCalls"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&ctx); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	return ctx.ToolCalls, nil
}

// inputSchema is a tool's input schema as the client gave it, typed or
// raw: as the tool marshals.
func inputSchema(tool mcp.Tool) map[string]any {
	raw, err := json.Marshal(tool)
	if err != nil {
		return nil
	}
	var t struct {
		InputSchema map[string]any `json:"inputSchema"`
	}
	_ = json.Unmarshal(raw, &t)
	return t.InputSchema
}

// arguments makes up a value for each property of a tool's input schema
// (user.Arguments). A schema object is the input schema of the first other
// tool listed, as the client saw it.
func arguments(tool mcp.Tool, tools []mcp.Tool) map[string]any {
	props, _ := inputSchema(tool)["properties"].(map[string]any)
	args := user.Arguments(props)
	if prop, _ := props["schema"].(map[string]any); prop["type"] == "object" {
		for _, other := range tools {
			if other.Name != tool.Name {
				args["schema"] = inputSchema(other)
				break
			}
		}
	}
	return args
}
