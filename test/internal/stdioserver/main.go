// Command stdioserver is an MCP server over stdio for the stdio client's
// tests: mcp-go's, with tools and modes to misbehave on command. Its
// behaviour is set by environment variables, which the client passes with
// WithStdioEnv:
//
//   - STDIOSERVER_LOG: a file each run of the unannotated tool "append"
//     appends its id to (O_APPEND), so that a test counts the runs across
//     processes;
//   - STDIOSERVER_CRASH_IF: a file; while it exists the server writes two
//     lines to stderr and exits with status 3 at once (a crash loop that
//     comes good when the file is removed);
//   - STDIOSERVER_GARBAGE=1: non-JSON lines on stdout before serving;
//   - STDIOSERVER_GRANDCHILD=1: start `sh -c 'trap "" TERM; sleep 300'`, a
//     grandchild through a shell that ignores SIGTERM and holds the pipes;
//   - STDIOSERVER_IGNORE_TERM=1: ignore SIGTERM, and stay after stdin ends.
//
// Tools: "echo" (read-only; sleeps "ms" milliseconds), "append"
// (unannotated: not safe to repeat; sleeps "ms", then appends "id"),
// "crash" (exits with status 7, after a line on stderr), "close_stdout"
// (closes stdout and stays), "big" (answers "bytes" bytes on one line),
// "endless" (writes one line to stdout that never ends),
// "pid", "shape" (schemas of JSON Schema 2020-12, testserver's).
// A subscription to a resource (resources/subscribe, or subscriptions/listen
// in the stateless era) makes it send notifications/resources/updated for
// the URI every 20 ms.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func main() {
	if f := os.Getenv("STDIOSERVER_CRASH_IF"); f != "" {
		if _, err := os.Stat(f); err == nil {
			fmt.Fprintln(os.Stderr, "stdioserver: starting")
			fmt.Fprintln(os.Stderr, "fatal: configuration missing (crash loop)")
			os.Exit(3)
		}
	}
	if os.Getenv("STDIOSERVER_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	if os.Getenv("STDIOSERVER_GRANDCHILD") == "1" {
		cmd := exec.Command("/bin/sh", "-c", `trap "" TERM; sleep 300`)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // it holds the pipes open
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "grandchild:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "grandchild", cmd.Process.Pid)
	}
	if os.Getenv("STDIOSERVER_GARBAGE") == "1" {
		fmt.Println("stdioserver starting up (a log line on stdout)")
		fmt.Println("DEBUG: not json")
	}

	s := server.NewMCPServer("stdioserver", "1.0.0",
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithLogging(),
		server.WithHooks(subscriptions()),
	)
	// shape's schemas have keywords mcp-go's typed schema drops: a client
	// must hand them on as the server sent them, over stdio too.
	shape := mcp.NewToolWithRawSchema("shape", "Describes a shape.", json.RawMessage(testserver.ShapeInputSchema))
	shape.RawOutputSchema = json.RawMessage(testserver.ShapeOutputSchema)
	s.AddTool(shape, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"area": 0}, `{"area":0}`), nil
	})
	s.AddTool(mcp.NewTool("echo", mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("text"), mcp.WithNumber("ms")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sleep(ctx, req)
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("append", mcp.WithString("id"), mcp.WithNumber("ms")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f, err := os.OpenFile(os.Getenv("STDIOSERVER_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, err
			}
			_, err = fmt.Fprintln(f, req.GetString("id", ""))
			_ = f.Close()
			if err != nil {
				return nil, err
			}
			sleep(ctx, req) // after it ran: a kill now leaves its outcome unknown
			return mcp.NewToolResultText("appended"), nil
		})
	s.AddTool(mcp.NewTool("crash"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "panic: crash tool called")
			os.Exit(7)
			return nil, nil
		})
	s.AddTool(mcp.NewTool("close_stdout"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "closing stdout, and staying")
			_ = os.Stdout.Close()
			select {}
		})
	s.AddTool(mcp.NewTool("big", mcp.WithNumber("bytes")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("x", int(req.GetFloat("bytes", 0)))), nil
		})
	s.AddTool(mcp.NewTool("endless"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			chunk := []byte(strings.Repeat("x", 64<<10))
			for {
				if _, err := os.Stdout.Write(chunk); err != nil {
					os.Exit(1)
				}
			}
		})
	s.AddTool(mcp.NewTool("pid", mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strconv.Itoa(os.Getpid())), nil
		})
	notifier = s

	fmt.Fprintln(os.Stderr, "stdioserver: serving", os.Getpid())
	err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout)
	if os.Getenv("STDIOSERVER_IGNORE_TERM") == "1" {
		select {} // a server that does not exit when its stdin ends
	}
	if err != nil && err != context.Canceled {
		fmt.Fprintln(os.Stderr, "stdioserver:", err)
	}
}

var notifier *server.MCPServer

func sleep(ctx context.Context, req mcp.CallToolRequest) {
	if ms := req.GetFloat("ms", 0); ms > 0 {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// subscriptions sends notifications/resources/updated for each subscribed
// URI every 20 ms, for as long as the process lives.
func subscriptions() *server.Hooks {
	var mu sync.Mutex
	subscribed := map[string]bool{}
	start := func(uri string) {
		mu.Lock()
		defer mu.Unlock()
		if subscribed[uri] {
			return
		}
		subscribed[uri] = true
		go func() {
			for range time.Tick(20 * time.Millisecond) {
				notifier.SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri})
			}
		}()
	}
	h := &server.Hooks{}
	// resources/subscribe in the session era, subscriptions/listen in the
	// stateless one.
	h.AddAfterSubscribe(func(ctx context.Context, id any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		start(req.Params.URI)
	})
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
		for _, uri := range req.Params.Notifications.ResourceSubscriptions {
			start(uri)
		}
	})
	return h
}
