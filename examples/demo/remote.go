package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
)

// runRemote checks the MCP server at url: initialize, list the tools, ping,
// and call echo if there is one, all within timeout.
func runRemote(url string, timeout time.Duration, opts []client.Option) (err error) {
	c, err := client.New(url, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() { err = explain(err, url, timeout) }()

	fmt.Printf("connecting to %s (giving up after %v)\n", url, timeout)
	initReq := mcp.InitializeRequest{}
	initReq.Params.ClientInfo = clientInfo
	res, err := c.Initialize(ctx, initReq)
	if err != nil {
		return fmt.Errorf("could not open a session: %w", err)
	}
	fmt.Printf("server: %s %s\n", res.ServerInfo.Name, res.ServerInfo.Version)
	fmt.Printf("protocol version: %s\n", res.ProtocolVersion)

	var tools []mcp.Tool
	if res.Capabilities.Tools != nil {
		list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = list.Tools
		fmt.Printf("tools (%d):\n", len(tools))
		for _, t := range tools {
			fmt.Printf("  %-24s %s\n", t.Name, describeTool(t))
		}
	} else {
		fmt.Println("tools: the server offers none")
	}

	start := time.Now()
	if err := c.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	fmt.Printf("ping: ok (%s)\n", short(time.Since(start)))

	if i := slices.IndexFunc(tools, func(t mcp.Tool) bool { return t.Name == "echo" }); i >= 0 {
		args := map[string]any{echoArgument(tools[i]): "hello from resilientmcp"}
		text, err := callText(ctx, c, "echo", args)
		if err != nil {
			return fmt.Errorf("echo: %w", err)
		}
		fmt.Printf("echo(%s) = %q\n", formatArgs(args), text)
	}

	fmt.Println("client stats:")
	printStats(c.Stats())
	return nil
}

// explain turns the errors a user can act on into a sentence.
func explain(err error, url string, timeout time.Duration) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrAuthorizationRequired),
		errors.Is(err, transport.ErrOAuthAuthorizationRequired),
		errors.Is(err, transport.ErrUnauthorized):
		return fmt.Errorf("the server requires authorization (%w)", err)
	case errors.Is(err, transport.ErrLegacySSEServer):
		return fmt.Errorf("%s is not a Streamable HTTP MCP endpoint; an older SSE-only server? (%w)", url, err)
	case errors.Is(err, client.ErrUnavailable):
		return fmt.Errorf("could not reach an MCP server at %s within %v: %w", url, timeout, err)
	}
	return err
}

// echoArgument guesses the name of echo's text argument from its schema.
func echoArgument(t mcp.Tool) string {
	props := t.InputSchema.Properties
	for _, name := range []string{"text", "message", "msg", "input", "value"} {
		if _, ok := props[name]; ok {
			return name
		}
	}
	if len(t.InputSchema.Required) > 0 {
		return t.InputSchema.Required[0]
	}
	return "text"
}

// describeTool spells out the hints that decide whether a call may be sent
// again when its outcome is unknown.
func describeTool(t mcp.Tool) string {
	hint := func(b *bool) string {
		if b == nil {
			return "unset"
		}
		return fmt.Sprint(*b)
	}
	replay := "never replayed"
	if client.DefaultRetryToolCall(t) {
		replay = "safe to replay"
	}
	return fmt.Sprintf("readOnly=%-5s idempotent=%-5s -> %s",
		hint(t.Annotations.ReadOnlyHint), hint(t.Annotations.IdempotentHint), replay)
}

// callText calls a tool and returns its text content. A result flagged as
// an error is returned as an error.
func callText(ctx context.Context, c *client.ResilientClient, tool string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var texts []string
	for _, content := range res.Content {
		if t, ok := mcp.AsTextContent(content); ok {
			texts = append(texts, t.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		return "", fmt.Errorf("the tool reported an error: %q", text)
	}
	return text, nil
}

func formatArgs(args map[string]any) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%#v", k, args[k])
	}
	return strings.Join(parts, ", ")
}

func printStats(s client.Stats) {
	rows := []struct {
		name  string
		value any
		what  string
	}{
		{"calls", s.Calls, "calls made"},
		{"retries", s.Retries, "attempts beyond a call's first"},
		{"replays", s.Replays, "resends after a session expired"},
		{"reinitializations", s.Reinitializations, "new sessions in place of expired ones"},
		{"redials", s.Redials, "new sessions in place of ones lost otherwise (connection, probes, wrong answer)"},
		{"probes", s.Probes, "probes sent (keepalive, and before a call)"},
		{"probe failures", s.ProbeFailures, "probes that failed (busy is not a failure)"},
		{"sessions", s.Sessions, "sessions in service now"},
		{"in flight", s.InFlight, "calls in progress now"},
	}
	for _, r := range rows {
		fmt.Printf("      %-18s %4v   %s\n", r.name, r.value, r.what)
	}
}
