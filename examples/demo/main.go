// Command demo shows a ResilientClient riding out what breaks plain MCP
// clients: a server restart that expires every session, an outage, and a
// dropped connection under a call that must not be repeated.
//
//	go run ./examples/demo            # against an in-process test server
//	go run ./examples/demo -v         # the same, with the client's debug logs on stderr
//	go run ./examples/demo -url URL   # check any Streamable HTTP MCP server
//
// It exits 0 when every step behaved as expected and 1 otherwise, so it
// doubles as a smoke check.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func main() {
	url := flag.String("url", "", "run against the MCP endpoint at `URL` instead of the in-process test server")
	timeout := flag.Duration("timeout", 5*time.Second, "with -url: how long to wait for the server in all")
	verbose := flag.Bool("v", false, "log the client's reconnects and retries to stderr")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}

	opts := []client.Option{
		client.WithKeepAlive(10 * time.Second),
		client.WithClientInfo(clientInfo),
	}
	if *verbose {
		opts = append(opts, client.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}

	var err error
	if *url != "" {
		err = runRemote(*url, *timeout, opts)
	} else {
		err = runDemo(opts)
	}
	if err != nil {
		fmt.Printf("FAILED: %v\n", err)
		os.Exit(1)
	}
}

var clientInfo = mcp.Implementation{Name: "resilientmcp-demo", Version: "0.1.0"}

// stepTimeout bounds every call of the demo that is not meant to wait.
const stepTimeout = 5 * time.Second

func runDemo(opts []client.Option) error {
	fmt.Println("resilientmcp demo: a ResilientClient against an in-process MCP test server")
	fmt.Println()

	// 1. The server.
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		return fmt.Errorf("[1] starting the test server: %w", err)
	}
	defer srv.Close()
	fmt.Printf("[1] test server (session era) listening at %s\n", srv.URL())

	// 2. Connect, list the tools, call two of them.
	c, err := client.New(srv.URL(), opts...)
	if err != nil {
		return fmt.Errorf("[2] client.New: %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	initReq := mcp.InitializeRequest{}
	initReq.Params.ClientInfo = clientInfo
	res, err := c.Initialize(ctx, initReq)
	if err != nil {
		return fmt.Errorf("[2] Initialize: %w", err)
	}
	fmt.Printf("[2] initialized: server %s %s, protocol %s\n", res.ServerInfo.Name, res.ServerInfo.Version, res.ProtocolVersion)
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("[2] ListTools: %w", err)
	}
	fmt.Printf("[2] %d tools listed; their annotations decide what may be replayed:\n", len(tools.Tools))
	for _, t := range tools.Tools {
		fmt.Printf("      %-10s %s\n", t.Name, describeTool(t))
	}
	if err := expectCall(ctx, c, "[2]", "echo", map[string]any{"text": "hello"}, "hello"); err != nil {
		return err
	}
	if err := expectCall(ctx, c, "[2]", "add", map[string]any{"a": 2, "b": 3}, "5"); err != nil {
		return err
	}

	// 3. A restart: the client's session expires, and the server answers 404.
	if err := srv.Restart(); err != nil {
		return fmt.Errorf("[3] restarting the server: %w", err)
	}
	fmt.Println("[3] server restarted: the client's session expired with it")
	before := c.Stats().Reinitializations
	if err := expectCall(ctx, c, "[3]", "echo", map[string]any{"text": "after restart"}, "after restart"); err != nil {
		return err
	}
	after := c.Stats().Reinitializations
	fmt.Printf("[3] the server answered 404 for the old session; the client opened a new one and sent the call again: Reinitializations %d -> %d\n", before, after)
	if before != 0 || after != 1 {
		return fmt.Errorf("[3] expected Reinitializations to go from 0 to 1, got %d -> %d", before, after)
	}

	// 4. An outage: calls wait for the server instead of failing.
	if err := outage(c, srv); err != nil {
		return err
	}

	// 5. A call that must not be repeated loses its answer.
	if err := outcomeUnknown(ctx, c, srv); err != nil {
		return err
	}

	// 6. Counters, then shut down.
	fmt.Println("[6] client stats:")
	printStats(c.Stats())
	c.Close()
	srv.Close()
	fmt.Println("[6] client and server closed")
	fmt.Println()
	fmt.Println("demo OK: every step behaved as expected")
	return nil
}

// outage stops the server under three callers and starts it again.
func outage(c *client.ResilientClient, srv *testserver.Server) error {
	const (
		callers  = 3
		downtime = 2 * time.Second
		deadline = 10 * time.Second
	)
	reinits := c.Stats().Reinitializations
	srv.Stop()
	type outcome struct {
		text   string
		err    error
		waited time.Duration
	}
	results := make([]outcome, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			text, err := callText(ctx, c, "echo", map[string]any{"text": fmt.Sprintf("waited %d", i+1)})
			results[i] = outcome{text, err, time.Since(start)}
		})
	}
	// Let the calls reach the client before saying they wait.
	for t := time.Now(); c.Stats().InFlight < callers && time.Since(t) < time.Second; {
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Printf("[4] server down for %v; %d calls waiting (deadline %v each)\n", downtime, callers, deadline)
	time.Sleep(downtime)
	if err := srv.Start(); err != nil {
		return fmt.Errorf("[4] starting the server again: %w", err)
	}
	fmt.Println("[4] server up again")
	wg.Wait()
	var failed error
	for i, r := range results {
		want := fmt.Sprintf("waited %d", i+1)
		switch {
		case r.err != nil:
			fmt.Printf("[4] call %d failed after %s: %v\n", i+1, short(r.waited), r.err)
			failed = errors.Join(failed, fmt.Errorf("[4] call %d: %w", i+1, r.err))
		case r.text != want:
			fmt.Printf("[4] call %d returned %q after %s, want %q\n", i+1, r.text, short(r.waited), want)
			failed = errors.Join(failed, fmt.Errorf("[4] call %d returned %q, want %q", i+1, r.text, want))
		default:
			fmt.Printf("[4] call %d: echo = %q after waiting %s\n", i+1, r.text, short(r.waited))
		}
	}
	if failed == nil {
		fmt.Println("[4] the calls waited for the reconnect loop (exponential backoff) instead of failing;")
		fmt.Printf("[4] the session expired again with the restart: Reinitializations %d -> %d\n", reinits, c.Stats().Reinitializations)
	}
	return failed
}

// outcomeUnknown has the server run increment and drop the connection before
// answering: the client cannot know whether it ran and must not send it again.
func outcomeUnknown(ctx context.Context, c *client.ResilientClient, srv *testserver.Server) error {
	runs, sent := srv.ToolRuns("increment"), srv.RPCs("tools/call")
	srv.FailPOSTs(1, 0, "", true, "tools/call")
	fmt.Println("[5] the next tools/call will run on the server, which then drops the connection unanswered")
	text, err := callText(ctx, c, "increment", nil)
	runs, sent = srv.ToolRuns("increment")-runs, srv.RPCs("tools/call")-sent
	if err == nil {
		return fmt.Errorf("[5] increment succeeded (%q); expected an error wrapping client.ErrOutcomeUnknown", text)
	}
	fmt.Printf("[5] increment failed: %v\n", err)
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		return fmt.Errorf("[5] the error does not wrap client.ErrOutcomeUnknown: %w", err)
	}
	fmt.Println("[5] errors.Is(err, client.ErrOutcomeUnknown) = true: increment is not idempotent, so it was not replayed")
	fmt.Printf("[5] on the server: increment ran %d time(s), tools/call arrived %d time(s)\n", runs, sent)
	if runs != 1 || sent != 1 {
		return fmt.Errorf("[5] expected increment to run once and be sent once, got %d runs and %d sends", runs, sent)
	}
	return nil
}

// expectCall calls a tool and checks its text.
func expectCall(ctx context.Context, c *client.ResilientClient, step, tool string, args map[string]any, want string) error {
	start := time.Now()
	got, err := callText(ctx, c, tool, args)
	if err != nil {
		return fmt.Errorf("%s %s: %w", step, tool, err)
	}
	fmt.Printf("%s %s(%s) = %q (%s)\n", step, tool, formatArgs(args), got, short(time.Since(start)))
	if got != want {
		return fmt.Errorf("%s %s returned %q, want %q", step, tool, got, want)
	}
	return nil
}

// short formats a duration for the narration: 0.4ms, 12.3ms, 2.544s.
func short(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Millisecond).String()
}
