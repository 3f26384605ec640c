// The auth/* scenarios: the same agent, authorizing with WithOAuth. It is
// thin on purpose: everything OAuth is the library's. It reads
// MCP_CONFORMANCE_CONTEXT (a pre-registered client: client_id,
// client_secret, private_key_pem, signing_algorithm; an enterprise
// identity provider: idp_*; a workload's JWT: valid_jwt) into OAuthConfig,
// completes the browser step headlessly (GET the authorization URL without
// following redirects, return the Location), then does what an agent does:
// list the tools and call each one.

package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client"

	"github.com/resilientmcp/resilientmcp/examples/conformance/internal/user"
)

// clientMetadataURL is this client's ID metadata document: the URL the
// suite's authorization server expects of a client that has one.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

func runOAuth(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	cfg, err := oauthConfig(os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	c, err := client.New(url,
		client.WithClientInfo(mcp.Implementation{Name: "resilientmcp-conformance", Version: "1.0.0"}),
		client.WithOAuth(cfg),
		client.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))),
	)
	if err != nil {
		return err
	}
	defer c.Close()

	var tools []mcp.Tool
	for tool, err := range c.IterTools(ctx, mcp.ListToolsRequest{}) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, tool)
	}
	for _, tool := range tools {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool.Name
		req.Params.Arguments = map[string]any{}
		_, err := c.CallTool(ctx, req)
		fmt.Fprintf(os.Stderr, "tools/call %s: %v\n", tool.Name, err)
		var scope *client.InsufficientScopeError
		if errors.As(err, &scope) {
			return err // the scenario wanted to see the client stop
		}
	}
	return nil
}

// oauthConfig is the suite's context as OAuthConfig.
func oauthConfig(raw string) (client.OAuthConfig, error) {
	var ctx struct {
		ClientID         string `json:"client_id"`
		ClientSecret     string `json:"client_secret"`
		PrivateKeyPEM    string `json:"private_key_pem"`
		SigningAlgorithm string `json:"signing_algorithm"`
		// Enterprise-managed authorization: the user's ID token and the
		// identity provider that exchanges it for an ID-JAG.
		IdPClientID      string `json:"idp_client_id"`
		IdPIDToken       string `json:"idp_id_token"`
		IdPIssuer        string `json:"idp_issuer"`
		IdPTokenEndpoint string `json:"idp_token_endpoint"`
		// Workload identity: the platform's JWT for this workload.
		WorkloadJWT string `json:"valid_jwt"`
	}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &ctx); err != nil {
			return client.OAuthConfig{}, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	cfg := client.OAuthConfig{
		ClientID:          ctx.ClientID,
		ClientSecret:      ctx.ClientSecret,
		ClientMetadataURL: clientMetadataURL,
		SigningAlgorithm:  ctx.SigningAlgorithm,
		RedirectURI:       "http://127.0.0.1:8976/callback",
		Authorize:         user.Browser,
	}
	if ctx.IdPIDToken != "" {
		cfg.Enterprise = &auth.EnterpriseAuthorization{
			IDToken:       func(context.Context) (string, error) { return ctx.IdPIDToken, nil },
			TokenEndpoint: ctx.IdPTokenEndpoint,
			Issuer:        ctx.IdPIssuer,
			ClientID:      ctx.IdPClientID,
		}
	}
	if ctx.WorkloadJWT != "" {
		cfg.Workload = &auth.WorkloadIdentity{
			Assertion: func(context.Context) (string, error) { return ctx.WorkloadJWT, nil },
		}
	}
	if ctx.PrivateKeyPEM != "" {
		block, _ := pem.Decode([]byte(ctx.PrivateKeyPEM))
		if block == nil {
			return cfg, errors.New("MCP_CONFORMANCE_CONTEXT: private_key_pem holds no PEM block")
		}
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return cfg, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: private_key_pem: %w", err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return cfg, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: a %T cannot sign", key)
		}
		cfg.PrivateKey = signer
	}
	return cfg, nil
}
