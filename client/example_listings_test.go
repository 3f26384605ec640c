package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// An agent lists the server's tools every turn. While the server is down,
// the listing is the last good one, marked stale: the turn goes on with
// what the server offered, and only a call to one of its tools fails.
func ExampleStale() {
	srv, stop := exampleServer(testserver.StatelessEra)
	defer stop()
	c, err := client.New(srv.URL(), client.WithMaxStale(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	turn := func() {
		// FailFast: this turn would rather not wait for a server that is down.
		res, err := c.ListTools(client.WithCallOptions(ctx, client.FailFast()), mcp.ListToolsRequest{})
		if err != nil {
			log.Fatal(err)
		}
		if _, stale := client.Stale(res.Meta); stale {
			fmt.Println(len(res.Tools) > 0, "tools, as the server last listed them")
			return
		}
		fmt.Println(len(res.Tools) > 0, "tools, from the server")
	}
	turn()
	srv.Stop()
	turn()
	// Output:
	// true tools, from the server
	// true tools, as the server last listed them
}
