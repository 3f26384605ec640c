package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// runShared starts the authorization server and the MCP server, then two
// agent processes (this program, with -agent) on one FileStore directory,
// and checks what the authorization server counted.
func runShared() error {
	as, err := authserver.Start(authserver.Config{AccessTokenLifetime: 2 * time.Second})
	if err != nil {
		return err
	}
	defer as.Close()
	srv, err := testserver.Start(testserver.Config{Era: testserver.StatelessEra})
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.Reconfigure(testserver.Config{Era: testserver.StatelessEra, Guard: func(next http.Handler) http.Handler { return as.Protect(srv.URL(), next) }})
	if err := srv.Restart(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "resilientmcp-grants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("two agent processes share the grant in %s (auth.NewFileStore), 2 s tokens, rotating refresh tokens\n", dir)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			cmd := exec.Command(self, "-agent", srv.URL(), "-store", dir)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("agent %d: %w", i+1, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	st := as.Stats()
	fmt.Printf("the authorization server counted: %d registration, %d authorization, %d refreshes, %d refresh tokens spent twice\n",
		st.Registrations, st.Authorizations, st.Refreshes, st.ReuseDetected)
	if st.Registrations != 1 || st.Authorizations != 1 || st.ReuseDetected != 0 || st.Refreshes == 0 {
		return errors.New("want one registration, one authorization, refreshes, no refresh token spent twice")
	}
	return nil
}

// runAgent is one agent process: a client whose grant lives in the
// FileStore in dir, calling for 5 s (two token lifetimes and more).
func runAgent(url, dir string) error {
	store, err := auth.NewFileStore(dir)
	if err != nil {
		return err
	}
	var asked atomic.Int32
	c, err := client.New(url, client.WithOAuth(client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:8976/callback",
		Store:       store, // where the registration and the tokens live, for every process that opens dir
		Authorize: func(ctx context.Context, authURL string) (string, error) {
			asked.Add(1)
			return authserver.Approve(ctx, authURL)
		},
	}))
	if err != nil {
		return err
	}
	defer c.Close()
	calls := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); calls++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.CallTool(ctx, echo("hello"))
		cancel()
		if err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := c.Stats()
	fmt.Printf("  agent pid %d: %d calls, the user asked %d times by it, %d refreshes sent by it\n", os.Getpid(), calls, asked.Load(), st.TokenRefreshes)
	return nil
}

func echo(text string) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": text}
	return req
}
