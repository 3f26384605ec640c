package rig

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// GuardedServer is a test server whose every request is checked by a
// loopback authorization server's Protect.
func GuardedServer(t testing.TB, asCfg authserver.Config, cfg testserver.Config) (*authserver.Server, *testserver.Server) {
	t.Helper()
	as, err := authserver.Start(asCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	// The guard needs the server's URL, known once it listens.
	cfg.Guard = func(next http.Handler) http.Handler { return as.Protect(srv.URL(), next) }
	srv.Reconfigure(cfg)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	return as, srv
}

// Browser is a user who approves at once: it opens the authorization URL
// and reports where it was redirected, without following the redirect.
type Browser struct {
	Opened atomic.Int32
	Mu     sync.Mutex
	codes  []string // every code and state it saw, for the secrecy check
}

func (b *Browser) Authorize(ctx context.Context, authURL string) (string, error) {
	b.Opened.Add(1)
	loc, err := authserver.Approve(ctx, authURL)
	if err != nil {
		return "", err
	}
	b.Mu.Lock()
	for _, k := range []string{"code=", "code_verifier="} {
		if i := strings.Index(loc, k); i >= 0 {
			b.codes = append(b.codes, strings.SplitN(loc[i+len(k):], "&", 2)[0])
		}
	}
	if i := strings.Index(authURL, "code_challenge="); i >= 0 {
		b.codes = append(b.codes, strings.SplitN(authURL[i+len("code_challenge="):], "&", 2)[0])
	}
	b.Mu.Unlock()
	return loc, nil
}

// seen is every code and challenge the browser saw so far.
func (b *Browser) Seen() []string {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	return slices.Clone(b.codes)
}

// RecordingStore is a token store that remembers every token it was given.
type RecordingStore struct {
	transport.MemoryTokenStore
	Mu    sync.Mutex
	saved []string
}

func (s *RecordingStore) SaveToken(ctx context.Context, t *transport.Token) error {
	s.Mu.Lock()
	s.saved = append(s.saved, t.AccessToken, t.RefreshToken)
	s.Mu.Unlock()
	return s.MemoryTokenStore.SaveToken(ctx, t)
}

func (s *RecordingStore) Secrets() []string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	var out []string
	for _, v := range s.saved {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
