package redisstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/auth/redisstore"
	"github.com/resilientmcp/resilientmcp/internal/redistest"
)

// Every replica of an agent keeps its grant in one Redis, so that a
// rotating refresh token is spent once across them all: each renewal runs
// under the grant's lock and reads the grant stored when it got it, and a
// replica that finds it renewed by another writes nothing. Give the store
// to the client as client.OAuthConfig's Store. (A real redis-server runs
// here, on 127.0.0.1.)
func Example() {
	r, err := redistest.Run(false)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	key := auth.Key{Issuer: "https://as.example.com", Resource: "https://mcp.example.com/mcp", Client: "agent"}
	renew := func(ctx context.Context, current auth.Grant) (*auth.Grant, error) {
		if current.Token != nil {
			return nil, nil // renewed by another replica already: write nothing
		}
		fmt.Println("asking the authorization server")
		return &auth.Grant{Token: &auth.Token{AccessToken: "token-1"}}, nil
	}
	for replica := range 2 {
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
		store := redisstore.New(rdb)
		g, err := store.Update(context.Background(), key, renew)
		rdb.Close()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("replica %d: version %d, %s\n", replica+1, g.Version, g.Token.AccessToken)
	}
	// Output:
	// asking the authorization server
	// replica 1: version 1, token-1
	// replica 2: version 1, token-1
}
