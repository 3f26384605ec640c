package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// Authorizing with MCP's OAuth 2.1 flow: the client discovers the
// authorization server from the server's 401, registers, sends the user
// to authorize (here a headless browser that approves at once), and keeps
// the token fresh for every session and goroutine. A revoked grant is
// ErrAuthorizationRequired at once; Authorize recovers.
func ExampleWithOAuth() {
	as, _ := authserver.Start(authserver.Config{AccessTokenLifetime: time.Minute})
	defer as.Close()
	srv, _ := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	defer srv.Close()
	srv.Reconfigure(testserver.Config{Era: testserver.SessionEra, Guard: func(next http.Handler) http.Handler { return as.Protect(srv.URL(), next) }})
	_ = srv.Restart()

	c, err := client.New(srv.URL(), client.WithOAuth(client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:8976/callback",
		// Open authURL in the user's browser and return the URL the browser
		// was redirected to. This authorization server needs no user.
		Authorize: authserver.Approve,
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	call := func() error {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": "hi"}
		_, err := c.CallTool(ctx, req)
		return err
	}
	fmt.Println("first call:", call())
	as.Revoke()
	err = call()
	var ae *client.AuthorizationRequiredError
	fmt.Println("after a revocation:", errors.Is(err, client.ErrAuthorizationRequired), errors.As(err, &ae) && ae.Reason == "invalid_grant")
	fmt.Println("Authorize:", c.Authorize(ctx))
	fmt.Println("then:", call())
	// Output:
	// first call: <nil>
	// after a revocation: true true
	// Authorize: <nil>
	// then: <nil>
}
