// Package fleet runs all of an agent's MCP servers from one config file,
// the mcp.json that Claude Code, Claude Desktop, Cursor (mcpServers) and
// VS Code (servers, JSONC) write, each behind its own
// client.ResilientClient, with their tools merged under stable names and
// each call routed to its server. One server failing never takes the
// others down: Start returns once the live servers are ready, a server that
// is down keeps its last listing (stale) and its calls fail at once with
// client.ErrUnavailable, and it joins again when it comes up.
//
//	cfg, err := fleet.Load("mcp.json")
//	f, err := fleet.New(cfg, fleet.WithToolsChanged(onChange))
//	err = f.Start(ctx)             // errors only for `required` servers
//	tools, err := f.ListTools(ctx) // "<server>__<tool>"
//	res, err := f.CallTool(ctx, req)
//	defer f.Close()
//
// The file's fields, its ${...} references, the names, and what happens
// when a server fails: docs/fleet.md.
//
// Where things are: config.go (Config, Load, Parse, Check, redaction),
// jsonc.go (comments and trailing commas), interp.go (references),
// names.go, fleet.go (Start, the members' lives, tools, Status, Close),
// prompts.go (prompts and resources).
package fleet
