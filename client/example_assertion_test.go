package client_test

import (
	"context"
	"log"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/client"
)

// An agent acting for an enterprise's user (enterprise-managed
// authorization): the user's ID token from the company's single sign-on
// is exchanged at the identity provider for an ID-JAG, which the MCP
// server's authorization server takes in the JWT bearer grant. No browser.
func ExampleWithOAuth_enterprise() {
	idToken := func(ctx context.Context) (string, error) {
		return "the user's ID token from your SSO session", nil // refreshed there when it expires
	}
	c, err := client.New("https://mcp.example.com/mcp", client.WithOAuth(client.OAuthConfig{
		ClientID: "agent", ClientSecret: "secret", // the client at the MCP server's authorization server
		Enterprise: &auth.EnterpriseAuthorization{
			IDToken:  idToken,
			Issuer:   "https://sso.example.com", // its token endpoint is discovered
			ClientID: "agent-at-the-idp",
		},
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// A service with a platform identity (workload identity federation): the
// JWT the platform writes, and rotates, is read again for every grant.
// No user, no secret.
func ExampleWithOAuth_workload() {
	c, err := client.New("https://mcp.example.com/mcp", client.WithOAuth(client.OAuthConfig{
		Workload: &auth.WorkloadIdentity{AssertionFile: "/var/run/secrets/tokens/mcp"},
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}
