// Command oauth shows WithOAuth keeping an agent authorized through what
// ends long-lived authorizations: tokens that expire every 2 seconds, rotating
// single-use refresh tokens, "all tokens invalid now", an outage of the
// authorization server, and a revoked grant. It runs against a loopback
// OAuth 2.1 authorization server and an MCP server it guards, both
// in-process; no setup.
//
//	go run ./examples/oauth
//
// With -shared, it shows two agent processes (this program, run again)
// sharing one grant through an auth.FileStore: the user is asked once,
// the client registers once, and each token expiry is refreshed once
// between them, a rotating refresh token never spent twice:
//
//	go run ./examples/oauth -shared
//
// It exits 0 when every step behaved as expected and 1 otherwise.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func main() {
	shared := flag.Bool("shared", false, "two processes share one grant through a FileStore")
	agent := flag.String("agent", "", "(internal) run as one of the -shared agents against this MCP URL")
	dir := flag.String("store", "", "(internal) the -shared agents' FileStore directory")
	flag.Parse()
	if *agent != "" {
		if err := runAgent(*agent, *dir); err != nil {
			fmt.Println("agent FAILED:", err)
			os.Exit(1)
		}
		return
	}
	run := run
	if *shared {
		run = runShared
	}
	if err := run(); err != nil {
		fmt.Println("FAILED:", err)
		os.Exit(1)
	}
	fmt.Println("OK")
}

func run() error {
	as, err := authserver.Start(authserver.Config{AccessTokenLifetime: 2 * time.Second})
	if err != nil {
		return err
	}
	defer as.Close()
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.Reconfigure(testserver.Config{Era: testserver.SessionEra, Guard: func(next http.Handler) http.Handler { return as.Protect(srv.URL(), next) }})
	if err := srv.Restart(); err != nil {
		return err
	}
	fmt.Printf("MCP server %s, guarded by the authorization server %s (2 s access tokens, rotating refresh tokens)\n", srv.URL(), as.URL())

	c, err := client.New(srv.URL(), client.WithPoolSize(4), client.WithOAuth(client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:8976/callback",
		// A real agent opens a browser here; this user approves at once.
		Authorize: func(ctx context.Context, authURL string) (string, error) {
			fmt.Println("  the user is asked to authorize")
			return authserver.Approve(ctx, authURL)
		},
	}))
	if err != nil {
		return err
	}
	defer c.Close()

	step := func(what string, d time.Duration, during func()) error {
		var calls, failed atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					req := mcp.CallToolRequest{}
					req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": "hi"}
					_, err := c.CallTool(ctx, req)
					cancel()
					calls.Add(1)
					if err != nil {
						failed.Add(1)
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
		if during != nil {
			during()
		}
		time.Sleep(d)
		close(stop)
		wg.Wait()
		st := as.Stats()
		fmt.Printf("%-52s %5d calls, %d failed; refreshes so far %d, reused refresh tokens %d\n", what, calls.Load(), failed.Load(), st.Refreshes, st.ReuseDetected)
		if failed.Load() > 0 {
			return fmt.Errorf("%s: %d calls failed", what, failed.Load())
		}
		return nil
	}

	if err := step("32 goroutines, 4 sessions, for 5 s:", 5*time.Second, nil); err != nil {
		return err
	}
	if err := step(`"all tokens invalid now":`, time.Second, as.InvalidateAccessTokens); err != nil {
		return err
	}
	if err := step("authorization server down for 1.5 s:", 3*time.Second, func() {
		as.SetDown(true)
		time.AfterFunc(1500*time.Millisecond, func() { as.SetDown(false) })
	}); err != nil {
		return err
	}

	as.Revoke()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": "after revocation"}
	_, err = c.CallTool(context.Background(), req)
	var ae *client.AuthorizationRequiredError
	if !errors.As(err, &ae) {
		return fmt.Errorf("a call after the revocation: %v, want ErrAuthorizationRequired", err)
	}
	fmt.Printf("grant revoked: the next call fails at once with ErrAuthorizationRequired (%s); one authorization starts in the background\n", ae.Reason)
	recovered := false
	for range 100 {
		if _, err := c.CallTool(context.Background(), req); err == nil {
			recovered = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !recovered {
		return errors.New("no call succeeded after the background authorization")
	}
	fmt.Println("calls succeed again with the background authorization's token (c.Authorize(ctx) does the same on demand)")
	s := c.Stats()
	fmt.Printf("client stats: %d token refreshes (%d failed while the server was down), %d authorizations, %d calls refused for authorization\n",
		s.TokenRefreshes, s.TokenRefreshFailures, s.Authorizations, s.AuthorizationRequired)
	return nil
}
