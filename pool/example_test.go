package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"

	"github.com/resilientmcp/resilientmcp/pool"
	"github.com/resilientmcp/resilientmcp/retry"
)

// conn stands for what a pool holds: a connection, a session.
type conn struct{ id int64 }

// A Pool of one member: Acquire dials it, a discarded generation is
// replaced in the background once however many callers saw it fail, and
// callers wait for the replacement within their context.
func Example() {
	var dials atomic.Int64
	p := pool.New(pool.Config[*conn]{
		Size: 1,
		Dial: func(ctx context.Context, member int, prev *conn, cause error) (*conn, error) {
			if cause != nil {
				fmt.Println("replacing, because:", cause)
			}
			return &conn{id: dials.Add(1)}, nil
		},
		NewBackOff: retry.DefaultBackOff,
	})
	defer p.Close()

	ctx := context.Background()
	lease, err := p.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("using connection", lease.Value().id)
	// The call on it failed in a way that says the connection is dead.
	lease.Discard(errors.New("connection reset"))
	lease.Release()

	lease, err = p.Acquire(ctx) // waits for the replacement
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("using connection", lease.Value().id)
	lease.Release()
	// Output:
	// using connection 1
	// replacing, because: connection reset
	// using connection 2
}
