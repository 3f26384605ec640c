package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F20 with a token obtained elsewhere: the server stops accepting the
// token (rotated, "all tokens invalid now"). 16 goroutines calling the
// non-idempotent increment meet the 401 at once: the token function is asked
// for a replacement once, every call is sent again with it and runs once.
func TestF20BearerTokenRejectedIsReplacedOnceForAll(t *testing.T) {
	const goroutines = 16
	var mu sync.Mutex
	var asked []string
	var refused atomic.Int32 // requests refused with t1, as the server's 401s come back
	tokens := func(_ context.Context, rejected string) (string, error) {
		mu.Lock()
		asked = append(asked, rejected)
		mu.Unlock()
		if rejected != "" {
			// A token endpoint takes a moment: every call already on its
			// way with t1 meets the 401 meanwhile (bounded wait).
			for i := 0; i < 400 && refused.Load() < goroutines; i++ {
				time.Sleep(5 * time.Millisecond)
			}
		}
		return map[string]string{"": "t1", "t1": "t2"}[rejected], nil
	}
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra, RequireToken: "t1"}, false, client.WithBearerToken(tokens))
	r.Start()
	r.MustEcho("with t1")
	r.Srv.SetToken("t2")
	r.Srv.OnRefused(func() { refused.Add(1) })

	var failed atomic.Int32
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			if err := r.Increment(); err != nil {
				failed.Add(1)
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if runs := r.Srv.ToolRuns("increment"); runs != goroutines {
		t.Errorf("increment ran %d times for %d calls, want once each", runs, goroutines)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0] != "" || asked[1] != "t1" {
		t.Errorf("the token function was asked for %q; want the first token, then one replacement of t1", asked)
	}
	if s := r.C.Stats(); s.AuthorizationRequired != 0 {
		t.Errorf("stats %+v: no call should have failed for authorization", s)
	}
}

// A token function that has nothing better than the token just refused:
// the call fails at once with ErrAuthorizationRequired (token_rejected),
// did not run, and nothing loops.
func TestBearerTokenRefusedAgainIsAuthorizationRequired(t *testing.T) {
	var calls atomic.Int32
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra, RequireToken: "t1"}, false,
		client.WithBearerToken(func(context.Context, string) (string, error) { calls.Add(1); return "t1", nil }))
	r.Start()
	r.Srv.SetToken("revoked-all")
	err := r.Increment()
	rig.CheckContract(t, err, client.ErrAuthorizationRequired, "")
	var ae *client.AuthorizationRequiredError
	if !errors.As(err, &ae) || ae.Reason != "token_rejected" {
		t.Errorf("err = %v; want Reason token_rejected", err)
	}
	if runs := r.Srv.ToolRuns("increment"); runs != 0 {
		t.Errorf("increment ran %d times", runs)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the token function was called %d times, want 2: the first token and one replacement", n)
	}
}
