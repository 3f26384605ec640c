// Command pool shows many goroutines sharing one ResilientClient with a pool
// of sessions, through a server restart:
//
//	go run ./examples/pool
//
// A pool larger than one suits servers whose sessions hold no state the
// caller relies on (here, a stateless-era server); the default is one.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
}

func run() error {
	srv, err := testserver.Start(testserver.Config{Era: testserver.StatelessEra})
	if err != nil {
		return err
	}
	defer srv.Close()

	c, err := client.New(srv.URL(), client.WithPoolSize(4), client.WithKeepAlive(10*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		return err
	}

	const goroutines, calls = 64, 100
	fmt.Printf("%d goroutines × %d calls through one client with a pool of 4 sessions\n", goroutines, calls)
	var done, wrong, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				a, b := g, i
				req := mcp.CallToolRequest{}
				req.Params.Name = "add"
				req.Params.Arguments = map[string]any{"a": a, "b": b}
				res, err := c.CallTool(ctx, req)
				done.Add(1)
				switch {
				case err != nil:
					failed.Add(1)
				case len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != fmt.Sprint(a+b):
					wrong.Add(1)
				}
			}
		})
	}
	for done.Load() < goroutines*calls/2 {
		time.Sleep(time.Millisecond)
	}
	if err := srv.Restart(); err != nil {
		return err
	}
	fmt.Printf("server restarted after %d calls\n", done.Load())
	wg.Wait()

	s := c.Stats()
	fmt.Printf("%d calls in %v: %d failed, %d wrong answers\n", done.Load(), time.Since(start).Round(time.Millisecond), failed.Load(), wrong.Load())
	fmt.Printf("sessions %d, retries %d, state %v\n", s.Sessions, s.Retries, c.State())
	if failed.Load() > 0 || wrong.Load() > 0 {
		return fmt.Errorf("%d calls failed and %d got a wrong answer", failed.Load(), wrong.Load())
	}
	return nil
}
