package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/auth/redisstore"
	"github.com/resilientmcp/resilientmcp/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var key = auth.Key{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:2/mcp", Client: "agent"}

func client(t *testing.T, r *redistest.Server) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// takeovers counts the store's takeover notes.
type takeovers struct{ n atomic.Int32 }

func (h *takeovers) Enabled(context.Context, slog.Level) bool { return true }
func (h *takeovers) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "took over") {
		h.n.Add(1)
	}
	return nil
}
func (h *takeovers) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *takeovers) WithGroup(string) slog.Handler      { return h }

// 8 stores on 8 connections (as 8 replicas would have) add one each to a
// counter in the token, four times: none is lost, never two at once.
func TestUpdatesOneAtATime(t *testing.T) {
	r := redistest.Start(t, false)
	var mu sync.Mutex
	var inside, most int
	var wg sync.WaitGroup
	for range 8 {
		s := redisstore.New(client(t, r))
		wg.Go(func() {
			for range 4 {
				_, err := s.Update(t.Context(), key, func(_ context.Context, cur auth.Grant) (*auth.Grant, error) {
					mu.Lock()
					inside++
					most = max(most, inside)
					mu.Unlock()
					time.Sleep(time.Millisecond)
					mu.Lock()
					inside--
					mu.Unlock()
					s := "x"
					if cur.Token != nil {
						s = cur.Token.AccessToken + "x"
					}
					return &auth.Grant{Token: &auth.Token{AccessToken: s}}, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	g, err := redisstore.New(client(t, r)).Load(t.Context(), key)
	if err != nil || g.Token == nil || len(g.Token.AccessToken) != 32 || g.Version != 32 || most != 1 {
		t.Fatalf("after 32 updates: %+v, %v, %d at once; want 32 x's, version 32, one at a time", g, err, most)
	}
}

// A holder that died with the lock (its lease left in Redis, never
// released) holds the others back until the lease expires, not longer;
// the next holder notes the takeover.
func TestDeadHolderReleasesByExpiry(t *testing.T) {
	r := redistest.Start(t, false)
	rdb := client(t, r)
	h := &takeovers{}
	s := redisstore.New(rdb, redisstore.WithLease(400*time.Millisecond), redisstore.WithLogger(slog.New(h)))
	// What a holder leaves when it is killed: its lease and its name.
	if _, err := s.Update(t.Context(), key, func(context.Context, auth.Grant) (*auth.Grant, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	id := key.ID()
	rdb.Set(t.Context(), "resilientmcp:auth:lock:"+id, "dead", 400*time.Millisecond)
	rdb.Set(t.Context(), "resilientmcp:auth:holder:"+id, "dead", 0)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := s.Update(ctx, key, func(context.Context, auth.Grant) (*auth.Grant, error) { return &auth.Grant{}, nil }); err != nil {
		t.Fatalf("after the dead holder's lease: %v", err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond || h.n.Load() != 1 {
		t.Errorf("waited %v, %d takeovers; want about the lease, 1", waited, h.n.Load())
	}
}

// A renewal that outlasts the lease keeps it: nobody else gets in.
func TestLeaseRenewedWhileTheRenewalRuns(t *testing.T) {
	r := redistest.Start(t, false)
	a := redisstore.New(client(t, r), redisstore.WithLease(300*time.Millisecond))
	b := redisstore.New(client(t, r), redisstore.WithLease(300*time.Millisecond))
	held := make(chan struct{})
	var aDone, bIn atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := a.Update(t.Context(), key, func(ctx context.Context, _ auth.Grant) (*auth.Grant, error) {
			close(held)
			select {
			case <-time.After(time.Second): // over three leases
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			aDone.Store(time.Now().UnixNano())
			return &auth.Grant{}, nil
		})
		if err != nil {
			t.Errorf("the long renewal: %v", err)
		}
	})
	<-held
	_, err := b.Update(t.Context(), key, func(context.Context, auth.Grant) (*auth.Grant, error) {
		bIn.Store(time.Now().UnixNano())
		return nil, nil
	})
	wg.Wait()
	if err != nil || bIn.Load() < aDone.Load() {
		t.Errorf("the second holder got in %v before the first was done (err %v)", time.Duration(aDone.Load()-bIn.Load()), err)
	}
}

// Redis down: Load and Update fail with ErrStoreUnavailable (which is
// ErrUnavailable) by the caller's deadline, fn never runs; a holder whose
// lease cannot be renewed has its context ended (ErrLeaseLost) before the
// lease would expire. Redis back (with its data): all works again.
func TestRedisDown(t *testing.T) {
	r := redistest.Start(t, true)
	rdb := client(t, r)
	s := redisstore.New(rdb, redisstore.WithLease(600*time.Millisecond))
	if _, err := s.Update(t.Context(), key, func(context.Context, auth.Grant) (*auth.Grant, error) {
		return &auth.Grant{Token: &auth.Token{AccessToken: "a"}}, nil
	}); err != nil {
		t.Fatal(err)
	}

	var cause error
	var lostAfter time.Duration
	_, err := s.Update(t.Context(), key, func(ctx context.Context, _ auth.Grant) (*auth.Grant, error) {
		start := time.Now()
		r.Stop()
		select {
		case <-ctx.Done():
			cause, lostAfter = context.Cause(ctx), time.Since(start)
		case <-time.After(3 * time.Second):
		}
		return nil, nil
	})
	if !errors.Is(cause, redisstore.ErrLeaseLost) || lostAfter > 600*time.Millisecond {
		t.Errorf("the holder's context ended after %v with %v (Update: %v); want ErrLeaseLost within the lease", lostAfter, cause, err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	ran := false
	_, err = s.Update(ctx, key, func(context.Context, auth.Grant) (*auth.Grant, error) { ran = true; return nil, nil })
	if ran || !errors.Is(err, auth.ErrStoreUnavailable) || !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("Update with Redis down: ran %v, %v; want ErrStoreUnavailable", ran, err)
	}
	if _, err := s.Load(ctx, key); !errors.Is(err, auth.ErrStoreUnavailable) {
		t.Errorf("Load with Redis down: %v", err)
	}

	r.Restart()
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	g, err := s.Update(ctx, key, func(_ context.Context, cur auth.Grant) (*auth.Grant, error) {
		return &auth.Grant{Token: &auth.Token{AccessToken: cur.Token.AccessToken + "b"}}, nil
	})
	if err != nil || g.Token.AccessToken != "ab" || g.Version != 2 {
		t.Errorf("Redis back: %+v, %v; want the stored grant, version 2", g, err)
	}
}

// A write from a holder whose lease another holder took is refused.
func TestWriteAfterTheLeaseIsRefused(t *testing.T) {
	r := redistest.Start(t, false)
	rdb := client(t, r)
	s := redisstore.New(rdb, redisstore.WithLease(time.Minute))
	_, err := s.Update(t.Context(), key, func(ctx context.Context, _ auth.Grant) (*auth.Grant, error) {
		rdb.Set(ctx, "resilientmcp:auth:lock:"+key.ID(), "another", time.Minute)
		return &auth.Grant{Token: &auth.Token{AccessToken: "late"}}, nil
	})
	if !errors.Is(err, auth.ErrConflict) || !errors.Is(err, redisstore.ErrLeaseLost) {
		t.Fatalf("err = %v; want ErrConflict, ErrLeaseLost", err)
	}
	if g, _ := s.Load(t.Context(), key); g.Token != nil {
		t.Errorf("stored %+v; want nothing", g)
	}
}
