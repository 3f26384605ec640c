// Command raw is the baseline the README compares resilientmcp against: the
// conformance client of examples/conformance on raw mark3labs/mcp-go v1.2.1,
// with no resilientmcp at all.
//
//	go build -o /tmp/raw-conf ./examples/conformance/raw
//	conformance/referee.sh /tmp/raw-conf
//
// It uses mcp-go as a user would: it initializes, lists the tools and calls
// each with made-up arguments, accepts every elicitation as shown and
// answers sampling with a fixed text. The auth/* scenarios (the only use of
// MCP_CONFORMANCE_SCENARIO) use mcp-go's own OAuth: WithHTTPOAuth with PKCE,
// dynamic registration unless MCP_CONFORMANCE_CONTEXT names a pre-registered
// client, and on its authorization-required error the browser step run
// headlessly, then the request once more. mcp-go's gaps are left alone:
// they are what the baseline measures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/examples/conformance/internal/user"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: raw [flags ignored] SERVER_URL")
		os.Exit(2)
	}
	if err := run(os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "raw conformance client:", err)
		os.Exit(1)
	}
}

func run(serverURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)))}
	if strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/") {
		cfg, err := oauthConfig(os.Getenv("MCP_CONFORMANCE_CONTEXT"))
		if err != nil {
			return err
		}
		opts = append(opts, transport.WithHTTPOAuth(cfg))
	}
	trans, err := transport.NewStreamableHTTP(serverURL, opts...)
	if err != nil {
		return err
	}
	c := mcpclient.NewClient(trans,
		mcpclient.WithElicitationHandler(user.AcceptAsIs{}),
		mcpclient.WithSamplingHandler(user.FixedAnswer{}),
	)
	if err := authorized(ctx, func() error { return c.Start(ctx) }); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer c.Close()

	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go-raw-conformance", Version: "1.0.0"}
	if err := authorized(ctx, func() error { _, err := c.Initialize(ctx, init); return err }); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var tools *mcp.ListToolsResult
	if err := authorized(ctx, func() (err error) { tools, err = c.ListTools(ctx, mcp.ListToolsRequest{}); return err }); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tool := range tools.Tools {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool.Name
		req.Params.Arguments = user.Arguments(tool.InputSchema.Properties)
		var out *mcp.CallToolResult
		err := authorized(ctx, func() (err error) { out, err = c.CallTool(ctx, req); return err })
		fmt.Fprintf(os.Stderr, "tools/call %s: error %v, tool failed %t\n", tool.Name, err, err == nil && out.IsError)
	}
	return nil
}

// oauthConfig is mcp-go's OAuthConfig for the suite's context: PKCE, and the
// pre-registered client when the context names one.
func oauthConfig(raw string) (transport.OAuthConfig, error) {
	var pre struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &pre); err != nil {
			return transport.OAuthConfig{}, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	return transport.OAuthConfig{
		ClientID:     pre.ClientID,
		ClientSecret: pre.ClientSecret,
		RedirectURI:  "http://127.0.0.1:8976/callback",
		PKCEEnabled:  true,
	}, nil
}

// authorized runs op and, if mcp-go says authorization is required, runs
// the authorization flow as mcp-go's OAuth example does and op once more.
func authorized(ctx context.Context, op func() error) error {
	err := op()
	if !mcpclient.IsOAuthAuthorizationRequiredError(err) {
		return err
	}
	h := mcpclient.GetOAuthHandler(err)
	if h.GetClientID() == "" {
		if err := h.RegisterClient(ctx, "mcp-go-raw-conformance"); err != nil {
			return fmt.Errorf("register: %w", err)
		}
	}
	verifier, err := mcpclient.GenerateCodeVerifier()
	state, err2 := mcpclient.GenerateState()
	if err = errors.Join(err, err2); err != nil {
		return err
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, mcpclient.GenerateCodeChallenge(verifier))
	if err != nil {
		return err
	}
	loc, err := user.Browser(ctx, authURL)
	if err != nil {
		return err
	}
	callback, err := url.Parse(loc)
	if err != nil {
		return err
	}
	q := callback.Query()
	if err := h.ProcessAuthorizationResponse(ctx, q.Get("code"), q.Get("state"), verifier); err != nil {
		return fmt.Errorf("authorization response: %w", err)
	}
	return op()
}
