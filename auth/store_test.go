package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testKey = Key{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:2/mcp", Client: "dynamic http://127.0.0.1:3/cb"}

func stores(t *testing.T) map[string]Store {
	fs, err := NewFileStore(filepath.Join(t.TempDir(), "grants"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Store{"memory": NewMemoryStore(), "file": fs}
}

// 32 goroutines each add one to a counter kept in the stored token, under
// the lock: none is lost, so no two ran at once, and the version counts
// the writes.
func TestStoreUpdatesOneAtATime(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			var inside, most int
			var mu sync.Mutex
			for range 32 {
				wg.Go(func() {
					_, err := s.Update(t.Context(), testKey, func(_ context.Context, cur Grant) (*Grant, error) {
						mu.Lock()
						inside++
						most = max(most, inside)
						mu.Unlock()
						time.Sleep(time.Millisecond)
						mu.Lock()
						inside--
						mu.Unlock()
						n := "x"
						if cur.Token != nil {
							n = cur.Token.AccessToken + "x"
						}
						return &Grant{Registration: &Registration{ClientID: "c"}, Token: &Token{AccessToken: n}}, nil
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			g, err := s.Load(t.Context(), testKey)
			if err != nil || g.Token == nil || len(g.Token.AccessToken) != 32 || g.Version != 32 || most != 1 {
				t.Fatalf("after 32 updates: %+v, %v, %d at once; want 32 x's, version 32, one at a time", g, err, most)
			}
		})
	}
}

// A write whose version is no longer the stored one is refused; fn's
// error comes back with a grant it wrote anyway; nil writes nothing.
func TestStoreCompareAndSwap(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			errFn := errors.New("fn failed")
			g, err := s.Update(ctx, testKey, func(context.Context, Grant) (*Grant, error) {
				return &Grant{Registration: &Registration{ClientID: "c"}}, errFn
			})
			if !errors.Is(err, errFn) || g.Version != 1 || g.Registration == nil {
				t.Fatalf("write with an error: %+v, %v", g, err)
			}
			if g, err = s.Update(ctx, testKey, func(context.Context, Grant) (*Grant, error) { return nil, nil }); err != nil || g.Version != 1 {
				t.Fatalf("no write: %+v, %v", g, err)
			}
			// Another writer slips in while fn runs (a holder whose lease
			// lapsed): the write is refused.
			var write func(context.Context, Key, Grant) error
			switch s := s.(type) {
			case *MemoryStore:
				write = s.write
			case *FileStore:
				write = s.write
			}
			_, err = update(ctx, testKey, s, func(ctx context.Context, cur Grant) (*Grant, error) {
				if err := write(ctx, testKey, Grant{Version: cur.Version + 1}); err != nil {
					t.Fatal(err)
				}
				return &Grant{Token: &Token{AccessToken: "late"}}, nil
			}, write)
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("a write over another's: %v; want ErrConflict", err)
			}
		})
	}
}

// A waiter whose context ends before the lock is free gets
// ErrStoreUnavailable, which is ErrUnavailable.
func TestStoreLockWaitEndsWithTheContext(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			held, release := make(chan struct{}), make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = s.Update(context.Background(), testKey, func(context.Context, Grant) (*Grant, error) {
					close(held)
					<-release
					return nil, nil
				})
			}()
			<-held
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			ran := false
			_, err := s.Update(ctx, testKey, func(context.Context, Grant) (*Grant, error) { ran = true; return nil, nil })
			close(release)
			<-done
			if ran || !errors.Is(err, ErrStoreUnavailable) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("ran %v, err %v; want ErrStoreUnavailable after the deadline", ran, err)
			}
		})
	}
}

// The grant file is 0600 in a 0700 directory, named without anything of
// the key, and holds the secret only there.
func TestFileStoreFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grants")
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(t.Context(), testKey, func(context.Context, Grant) (*Grant, error) {
		return &Grant{Registration: &Registration{ClientID: "c", ClientSecret: "s3cret"}, Token: &Token{AccessToken: "a", RefreshToken: "r"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v, %v; want 0700", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		st, _ := os.Stat(filepath.Join(dir, e.Name()))
		if st.Mode().Perm() != 0o600 || strings.Contains(e.Name(), "127.0.0.1") || strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("%s: %v; want 0600, named by the key's hash, no temporary file left", e.Name(), st.Mode())
		}
	}
	again, _ := NewFileStore(dir)
	if g, err := again.Load(t.Context(), testKey); err != nil || g.Registration.ClientSecret != "s3cret" || g.Token.RefreshToken != "r" || g.Version != 1 {
		t.Errorf("read back: %+v, %v", g, err)
	}
	if err := os.WriteFile(filepath.Join(dir, testKey.ID()+".json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Load(t.Context(), testKey); !errors.Is(err, ErrStoreUnavailable) {
		t.Errorf("a damaged file: %v; want ErrStoreUnavailable", err)
	}
}

// A TokenStore keeps the tokens, the registration stays in memory.
func TestTokenStoreAdapter(t *testing.T) {
	ts := transport.NewMemoryTokenStore()
	s := newTokenStore(ts)
	if _, err := s.Update(t.Context(), testKey, func(context.Context, Grant) (*Grant, error) {
		return &Grant{Registration: &Registration{ClientID: "c"}, Token: &Token{AccessToken: "a", RefreshToken: "r", Scopes: []string{"x", "y"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if tok, err := ts.GetToken(t.Context()); err != nil || tok.AccessToken != "a" || tok.Scope != "x y" {
		t.Fatalf("in the TokenStore: %+v, %v", tok, err)
	}
	if g, err := newTokenStore(ts).Load(t.Context(), testKey); err != nil || g.Token.RefreshToken != "r" || g.Registration != nil {
		t.Fatalf("another adapter on it: %+v, %v; want the token, no registration", g, err)
	}
}
