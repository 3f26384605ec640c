package auth_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"

	"github.com/resilientmcp/resilientmcp/auth"
)

// A Transport carries a Source's token on every request to one origin.
// The server refuses the first token (expired, say); the Source is asked
// for another, given the refused one, and the request is sent again, which
// is safe since a 401 means it did not run. client.WithBearerToken is this,
// under a ResilientClient.
func ExampleTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "hello")
	}))
	defer srv.Close()
	origin, err := url.Parse(srv.URL)
	if err != nil {
		log.Fatal(err)
	}

	tokens := auth.NewSource(func(ctx context.Context, rejected string) (string, error) {
		fmt.Printf("fetching a token (rejected: %q)\n", rejected)
		if rejected == "" {
			return "stale", nil
		}
		return "fresh", nil
	})
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	hc := &http.Client{Transport: &auth.Transport{Base: base, Source: tokens, Origin: origin}}

	resp, err := hc.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// fetching a token (rejected: "")
	// fetching a token (rejected: "stale")
	// 200 hello
}

// A Store keeps one grant per Key and renews it under a lock, so that
// processes sharing it renew a grant once: each renewal reads the grant
// stored when it got the lock, and one that finds it already renewed
// writes nothing. Here two processes (two FileStores on one directory)
// renew in turn.
func ExampleNewFileStore() {
	dir, err := os.MkdirTemp("", "grants")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	key := auth.Key{Issuer: "https://as.example.com", Resource: "https://mcp.example.com/mcp", Client: "agent"}
	renew := func(ctx context.Context, current auth.Grant) (*auth.Grant, error) {
		if current.Token != nil {
			return nil, nil // renewed by another process already: write nothing
		}
		fmt.Println("asking the authorization server")
		return &auth.Grant{Token: &auth.Token{AccessToken: "token-1"}}, nil
	}
	for process := range 2 {
		store, err := auth.NewFileStore(dir)
		if err != nil {
			log.Fatal(err)
		}
		g, err := store.Update(context.Background(), key, renew)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("process %d: version %d, %s\n", process+1, g.Version, g.Token.AccessToken)
	}
	// Output:
	// asking the authorization server
	// process 1: version 1, token-1
	// process 2: version 1, token-1
}

// ParseChallenge reads what a 401 or 403 says: here a step-up, the server
// wanting a token with more scope (RFC 6750 §3), and where to learn about
// it (RFC 9728).
func ExampleParseChallenge() {
	h := http.Header{}
	h.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`)
	ch := auth.ParseChallenge(h)
	fmt.Println(ch.Error)
	fmt.Println(ch.Scopes)
	fmt.Println(ch.ResourceMetadata)
	// Output:
	// insufficient_scope
	// [files:read files:write]
	// https://mcp.example.com/.well-known/oauth-protected-resource
}
