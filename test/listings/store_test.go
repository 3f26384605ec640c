package listings

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/resilientmcp/resilientmcp/auth/redisstore"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/store"
	"github.com/resilientmcp/resilientmcp/internal/redistest"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func fileStore(t *testing.T, dir string) store.ListingStore {
	t.Helper()
	s, err := store.NewFileListingStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeAt opens the listing store where names: file:<dir> or redis:<addr>.
func storeAt(t *testing.T, where string) store.ListingStore {
	t.Helper()
	switch kind, at, _ := strings.Cut(where, ":"); kind {
	case "file":
		return fileStore(t, at)
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: at, MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
		t.Cleanup(func() { rdb.Close() })
		return redisstore.NewListingStore(rdb)
	}
	t.Fatalf("unknown listing store %q", where)
	return nil
}

func bearer(token string) client.Option {
	return client.WithBearerToken(func(context.Context, string) (string, error) { return token, nil })
}

// listWhileDown lists the tools of url, which is down, failing fast.
func listWhileDown(t *testing.T, url string, opts ...client.Option) (*mcp.ListToolsResult, error) {
	t.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.ListTools(client.WithCallOptions(ctx, client.FailFast()), mcp.ListToolsRequest{})
}

// F48: a private listing (cacheScope "private") is kept under the
// credential that fetched it: a client with another bearer token, sharing
// the store, is not served it, even stale; one with the same token is. A
// public listing is served to both.
func TestPrivateListingNotServedToAnotherToken(t *testing.T) {
	for _, scope := range []mcp.CacheScope{mcp.CacheScopePrivate, mcp.CacheScopePublic} {
		t.Run(string(scope), func(t *testing.T) {
			dir := t.TempDir()
			cfg := cached(scope)
			cfg.RequireToken = "alice"
			srv, err := testserver.Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			alice, err := client.New(srv.URL(), bearer("alice"), client.WithListingStore(fileStore(t, dir)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := alice.ListTools(ctx, mcp.ListToolsRequest{})
			alice.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := names(res)
			srv.Stop()

			res, err = listWhileDown(t, srv.URL(), bearer("bob"), client.WithListingStore(fileStore(t, dir)))
			switch {
			case scope == mcp.CacheScopePrivate && !errors.Is(err, client.ErrUnavailable):
				t.Fatalf("another token's client listed alice's private listing: %v, %v", names(res), err)
			case scope == mcp.CacheScopePublic && (err != nil || !slices.Equal(names(res), want)):
				t.Fatalf("another token's client could not list the public listing: %v, %v", names(res), err)
			}
			res, err = listWhileDown(t, srv.URL(), bearer("alice"), client.WithListingStore(fileStore(t, dir)))
			if err != nil || !slices.Equal(names(res), want) {
				t.Fatalf("alice's second client did not list her listing, stale: %v, %v", names(res), err)
			}
			if _, stale := client.Stale(res.Meta); !stale {
				t.Error("the listing from the store is not marked stale")
			}
		})
	}
}

// A listing agent is this test binary run again as a child process: it
// lists the tools of the server the environment names, on a file
// listing store, prints them and whether they were stale, and exits.
const (
	listAgentEnv   = "RESILIENTMCP_LIST_AGENT" // set: this process is a listing agent
	listAgentURL   = "RESILIENTMCP_LIST_AGENT_URL"
	listAgentStore = "RESILIENTMCP_LIST_AGENT_STORE"
)

// TestHelperListAgent is not a test: it is a listing agent when
// TestAgentRestartedListsStale runs the binary again with listAgentEnv set.
func TestHelperListAgent(t *testing.T) {
	if os.Getenv(listAgentEnv) == "" {
		t.Skip("a listing agent process of TestAgentRestartedListsStale")
	}
	res, err := listWhileDown(t, os.Getenv(listAgentURL), client.WithListingStore(storeAt(t, os.Getenv(listAgentStore))))
	if err != nil {
		t.Fatalf("list agent: %v", err)
	}
	age, stale := client.Stale(res.Meta)
	// The parent reads this line.
	os.Stdout.WriteString("listed: " + strings.Join(names(res), ",") + " stale=" + boolString(stale) + " age=" + age.String() + "\n")
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// runListAgent runs a listing agent to its end and returns its line.
func runListAgent(t *testing.T, url, where string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperListAgent$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), listAgentEnv+"=1", listAgentURL+"="+url, listAgentStore+"="+where)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		line := ""
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "listed: ") {
				line = s.Text()
			}
		}
		_ = cmd.Wait()
		done <- line
	}()
	select {
	case line := <-done:
		return line
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("the listing agent did not finish")
	}
	return ""
}

// F48: an agent process restarted while the server is down lists the
// tools its previous process listed, marked stale: on a directory (one
// machine) and on Redis (replicas).
func TestAgentRestartedListsStale(t *testing.T) {
	t.Run("FileListingStore", func(t *testing.T) {
		agentRestartedListsStale(t, "file:"+t.TempDir())
	})
	t.Run("Redis", func(t *testing.T) {
		agentRestartedListsStale(t, "redis:"+redistest.Start(t, false).Addr())
	})
}

func agentRestartedListsStale(t *testing.T, where string) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.StatelessEra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	first := runListAgent(t, srv.URL(), where)
	if !strings.HasPrefix(first, "listed: ") || !strings.Contains(first, "echo") || !strings.Contains(first, "stale=false") {
		t.Fatalf("the first agent, the server up: %q", first)
	}
	srv.Stop()
	second := runListAgent(t, srv.URL(), where)
	tools, _, _ := strings.Cut(strings.TrimPrefix(first, "listed: "), " ")
	if !strings.HasPrefix(second, "listed: "+tools+" stale=true age=") {
		t.Fatalf("the agent restarted while the server is down: %q, want the previous process's listing %q, stale", second, tools)
	}
}

// Within one client, a private answer is not served once the client sends
// another credential (the server refused the old token and the client was
// given a new one): the new token lists again. A public answer is.
func TestPrivateListingNotServedAcrossATokenChange(t *testing.T) {
	for _, scope := range []mcp.CacheScope{mcp.CacheScopePrivate, mcp.CacheScopePublic} {
		t.Run(string(scope), func(t *testing.T) {
			cfg := cached(scope)
			cfg.RequireToken = "alice"
			srv, err := testserver.Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			tokens := client.WithBearerToken(func(_ context.Context, rejected string) (string, error) {
				if rejected == "" {
					return "alice", nil
				}
				return "bob", nil
			})
			c, err := client.New(srv.URL(), tokens)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
				t.Fatal(err)
			}
			srv.SetToken("bob")
			if err := c.Ping(ctx); err != nil { // refused with alice's token, sent again with bob's
				t.Fatal(err)
			}
			if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
				t.Fatal(err)
			}
			want := int64(2)
			if scope == mcp.CacheScopePublic {
				want = 1
			}
			if n := srv.RPCs("tools/list"); n != want {
				t.Errorf("%d tools/list after the token changed, want %d", n, want)
			}
		})
	}
}
