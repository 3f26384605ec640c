package listings

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/client/store"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// cached is a test server of the 2026-07-28 era giving its listings and
// reads ttlMs 60000: mcp-go gives cache hints to that era only.
func cached(scope mcp.CacheScope) testserver.Config {
	return testserver.Config{Era: testserver.StatelessEra, CacheTTLMs: 60000, CacheScope: scope}
}

func names(res *mcp.ListToolsResult) []string {
	if res == nil {
		return nil
	}
	var out []string
	for _, t := range res.Tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// calls is an Observer that keeps how each call ended.
type calls struct {
	mu   sync.Mutex
	ends []observe.CallEnd
}

func (o *calls) StartCall(ctx context.Context, _ observe.CallInfo) context.Context { return ctx }
func (o *calls) StartAttempt(ctx context.Context, _ observe.AttemptInfo) context.Context {
	return ctx
}
func (o *calls) EndAttempt(context.Context, observe.AttemptEnd) {}
func (o *calls) EndCall(_ context.Context, end observe.CallEnd) {
	o.mu.Lock()
	o.ends = append(o.ends, end)
	o.mu.Unlock()
}
func (o *calls) HandleEvent(observe.Server, observe.Event) {}

func (o *calls) last() observe.CallEnd {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.ends) == 0 {
		return observe.CallEnd{}
	}
	return o.ends[len(o.ends)-1]
}

// F48, SEP-2549: a listing whose result carries ttlMs is served from the
// cache within it, with no request sent; a list_changed ends it, and so
// does Fresh for one call.
func TestListingServedFromCacheWithinItsTTL(t *testing.T) {
	obs := new(calls)
	r := rig.New(t, cached(mcp.CacheScopePublic), false, client.WithObserver(obs))
	var first []string
	for i := range 100 {
		res, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("ListTools %d: %v", i, err)
		}
		if i == 0 {
			first = names(res)
		} else if got := names(res); !slices.Equal(got, first) {
			t.Fatalf("ListTools %d from the cache = %v, want %v", i, got, first)
		}
		if _, stale := client.Stale(res.Meta); stale {
			t.Fatalf("ListTools %d within the ttl is marked stale", i)
		}
	}
	if n := r.Srv.RPCs("tools/list"); n != 1 {
		t.Fatalf("100 ListTools within the ttl sent %d tools/list, want 1", n)
	}
	if st := r.C.Stats(); st.CacheHits != 99 || st.StaleAnswers != 0 {
		t.Errorf("Stats: %d cache hits, %d stale answers; want 99 and 0", st.CacheHits, st.StaleAnswers)
	}
	if end := obs.last(); !end.FromCache || end.Stale || end.Attempts != 0 || end.Err != nil {
		t.Errorf("the observer saw a cache hit as %+v; want FromCache, not Stale, no attempt", end)
	}

	// Fresh asks the server, for that call only.
	if _, err := r.C.ListTools(client.WithCallOptions(r.Ctx(), client.Fresh()), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := r.Srv.RPCs("tools/list"); n != 2 {
		t.Fatalf("ListTools with Fresh sent %d tools/list in all, want 2", n)
	}

	// The server announces a change (it reaches the client on the listen
	// stream the cache asked for): the next ListTools lists again.
	rig.Eventually(t, "a ListTools after list_changed that lists again", func() bool {
		r.Srv.AnnounceListChanged(string(mcp.MethodNotificationToolsListChanged))
		time.Sleep(10 * time.Millisecond)
		if _, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
		return r.Srv.RPCs("tools/list") == 3
	})
	if _, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := r.Srv.RPCs("tools/list"); n != 3 {
		t.Errorf("the listing after the change was not cached: %d tools/list, want 3", n)
	}
}

// The cache is the one the replay decision reads: the tools the client
// listed itself to decide whether a call may be replayed are the answer a
// ListTools within the ttl gets, with no second tools/list.
func TestReplayDecisionAndListToolsShareOneCache(t *testing.T) {
	r := rig.New(t, cached(mcp.CacheScopePrivate), false, client.WithBackOff(rig.FastBackOff))
	// echo's answer is lost after it ran: the client lists the tools to
	// learn that echo is read-only, and replays it.
	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	r.MustEcho("once")
	if n := r.Srv.RPCs("tools/list"); n != 1 {
		t.Fatalf("the replay decision sent %d tools/list, want 1", n)
	}
	res, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{})
	if err != nil || !slices.Contains(names(res), "echo") {
		t.Fatalf("ListTools = %v, %v", res, err)
	}
	if n := r.Srv.RPCs("tools/list"); n != 1 {
		t.Errorf("ListTools after the replay decision's listing sent %d tools/list in all, want 1: two caches", n)
	}
}

// F48: the server killed and the breaker open, ListTools returns the last
// listing from the cache, marked stale with its age, without sending
// anything; CallTool still fails with ErrUnavailable; once the server is
// back, the next listing is fresh.
func TestListingServedStaleWhileServerDown(t *testing.T) {
	obs := new(calls)
	logs := new(rig.LogRecorder)
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false,
		client.WithObserver(obs), client.WithFailFastAfter(50*time.Millisecond),
		client.WithBackOff(rig.FastBackOff), client.WithLogger(logs.Logger()))
	listed := time.Now() // before the listing: its age is no more than the time since
	res, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := names(res)

	r.Srv.Stop()
	rig.Eventually(t, "the breaker open", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, _ = r.C.CallTool(ctx, rig.ToolRequest("echo", map[string]any{"text": "x"}))
		return r.C.Stats().FailingFast
	})
	before := r.C.Stats()
	for i := range 3 {
		res, err = r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("ListTools %d while the server is down: %v", i, err)
		}
		age, stale := client.Stale(res.Meta)
		if !stale || age <= 0 || age > time.Since(listed) {
			t.Fatalf("ListTools while the server is down: stale %v, age %v (listed %v ago)", stale, age, time.Since(listed))
		}
		if got := names(res); !slices.Equal(got, want) {
			t.Fatalf("the stale listing = %v, want %v", got, want)
		}
		if end := obs.last(); !end.FromCache || !end.Stale || end.Err != nil || end.Attempts != 0 {
			t.Fatalf("the observer saw the stale answer as %+v; want a success from the cache, nothing sent", end)
		}
	}
	after := r.C.Stats()
	if after.StaleAnswers-before.StaleAnswers != 3 || after.Unavailable != before.Unavailable {
		t.Errorf("Stats: %d stale answers, %d more unavailable; want 3 and 0", after.StaleAnswers-before.StaleAnswers, after.Unavailable-before.Unavailable)
	}
	n := 0
	for _, line := range []string{logs.String()} {
		for i := 0; i+len("serving the last good listings") <= len(line); i++ {
			if line[i:i+len("serving the last good listings")] == "serving the last good listings" {
				n++
			}
		}
	}
	if n != 1 {
		t.Errorf("the stale answers were logged %d times, want once per outage:\n%s", n, logs.String())
	}
	if _, err := r.C.CallTool(r.Ctx(), rig.ToolRequest("echo", map[string]any{"text": "x"})); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("CallTool while the server is down = %v, want ErrUnavailable: a tool call is never answered from a cache", err)
	}

	// Counted before the start: the client's reconnect loop may list the
	// tools of the server it finds back (a sessionless server is asked
	// who it is, and its tools listed again) before the first ListTools
	// below, which may then be answered from that fresh listing.
	lists := r.Srv.RPCs("tools/list")
	if err := r.Srv.Start(); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, "a fresh listing once the server is back", func() bool {
		res, err = r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{})
		_, stale := client.Stale(res.Meta)
		return err == nil && !stale
	})
	if r.Srv.RPCs("tools/list") == lists {
		t.Error("the fresh listing sent no tools/list")
	}
}

// A stale answer is served for the server's silence only: its own answer,
// a JSON-RPC error, is returned as it is.
func TestServersErrorIsNotAnsweredStale(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
	if _, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	r.Srv.FailPOSTsAnswer(1, 200, "", mcp.INVALID_PARAMS, false, "tools/list")
	res, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{})
	if err == nil {
		t.Fatalf("ListTools answered with the server's JSON-RPC error = %+v, want the error", names(res))
	}
	if r.C.Stats().StaleAnswers != 0 {
		t.Error("the server's error was answered stale")
	}
}

// A listing is never served stale across a change of the server's
// identity: the client reconnected to another version, and the old one's
// listing is dropped, from memory and from the listing store.
func TestNoStaleListingAcrossServerIdentity(t *testing.T) {
	t.Run("memory", func(t *testing.T) { noStaleListingAcrossServerIdentity(t, nil) })
	t.Run("FileListingStore", func(t *testing.T) { noStaleListingAcrossServerIdentity(t, fileStore(t, t.TempDir())) })
}

func noStaleListingAcrossServerIdentity(t *testing.T, store store.ListingStore) {
	cfg := testserver.Config{Era: testserver.StatelessEra, ServerVersion: "1"}
	opts := []client.Option{client.WithFailFastAfter(50 * time.Millisecond), client.WithBackOff(rig.FastBackOff)}
	if store != nil {
		opts = append(opts, client.WithListingStore(store))
	}
	r := rig.New(t, cfg, false, opts...)
	if _, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	r.Srv.Stop()
	cfg.ServerVersion = "2"
	r.Srv.Reconfigure(cfg)
	if err := r.Srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The new server names itself in its answer to another listing.
	rig.Eventually(t, "the new server's answer", func() bool {
		_, err := r.C.ListPrompts(r.Ctx(), mcp.ListPromptsRequest{})
		return err == nil
	})
	r.Srv.Stop()
	ctx := client.WithCallOptions(r.Ctx(), client.FailFast())
	res, err := r.C.ListTools(ctx, mcp.ListToolsRequest{})
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("ListTools after the server changed and went = %+v, %v; want ErrUnavailable, not the old server's listing", names(res), err)
	}
	if store == nil {
		return
	}
	// The store is written in the background; Close waits for the writes
	// queued before it.
	r.C.Close()
	stored, err := store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range stored {
		if l.Server != "resilientmcp-testserver 2" {
			t.Errorf("the store still holds %s of %q", l.Method, l.Server)
		}
	}
	if len(stored) == 0 {
		t.Error("the store holds nothing: the new server's prompts/list is missing")
	}
}

// WithListingCache(false): every listing is sent, and fails as it did
// before the cache.
func TestListingCacheOff(t *testing.T) {
	r := rig.New(t, cached(mcp.CacheScopePublic), false, client.WithListingCache(false))
	for range 3 {
		if _, err := r.C.ListTools(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Srv.RPCs("tools/list"); n != 3 {
		t.Fatalf("3 ListTools with the cache off sent %d tools/list, want 3", n)
	}
	r.Srv.Stop()
	ctx := client.WithCallOptions(r.Ctx(), client.FailFast())
	if _, err := r.C.ListTools(ctx, mcp.ListToolsRequest{}); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("ListTools with the cache off, the server down = %v, want ErrUnavailable", err)
	}
	if st := r.C.Stats(); st.CacheHits != 0 || st.StaleAnswers != 0 {
		t.Errorf("Stats with the cache off: %+v", st)
	}
}

// resources/read with ttlMs is cached as listings are; a
// notifications/resources/updated for the resource ends it. A read is
// served stale only when WithMaxStaleReads asks.
func TestReadCachedAndStaleOnlyWhenAsked(t *testing.T) {
	for _, asked := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "WithMaxStaleReads"}[asked], func(t *testing.T) {
			var opts []client.Option
			if asked {
				opts = append(opts, client.WithMaxStaleReads(time.Hour))
			}
			// A ttl of 1 s: the reads within it are served from the
			// cache, and the one after it, with the server down, stale.
			cfg := cached(mcp.CacheScopePrivate)
			cfg.CacheTTLMs = 1000
			r := rig.New(t, cfg, false, opts...)
			read := mcp.ReadResourceRequest{}
			read.Params.URI = testserver.CounterURI
			for range 5 {
				if _, err := r.C.ReadResource(r.Ctx(), read); err != nil {
					t.Fatal(err)
				}
			}
			if n := r.Srv.RPCs("resources/read"); n != 1 {
				t.Fatalf("5 reads within the ttl sent %d resources/read, want 1", n)
			}
			r.Srv.Stop()
			time.Sleep(time.Second) // the ttl ends
			res, err := r.C.ReadResource(client.WithCallOptions(r.Ctx(), client.FailFast()), read)
			if !asked {
				if !errors.Is(err, client.ErrUnavailable) {
					t.Fatalf("a read with the server down = %v, want ErrUnavailable: reads are not served stale unless asked", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a read with the server down, WithMaxStaleReads = %v", err)
			}
			if _, stale := client.Stale(res.Meta); !stale || len(res.Contents) != 1 {
				t.Fatalf("the stale read = %+v, stale %v", res, stale)
			}
		})
	}
}

// A resource updated (notifications/resources/updated, to a client that
// subscribed) is read again.
func TestReadAfterResourceUpdatedIsSent(t *testing.T) {
	r := rig.New(t, cached(mcp.CacheScopePrivate), false)
	read := mcp.ReadResourceRequest{}
	read.Params.URI = testserver.CounterURI
	if err := r.C.Subscribe(r.Ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: testserver.CounterURI}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.C.ReadResource(r.Ctx(), read); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, "a read after the update that is sent", func() bool {
		r.Srv.UpdateResource(testserver.CounterURI)
		time.Sleep(10 * time.Millisecond)
		if _, err := r.C.ReadResource(r.Ctx(), read); err != nil {
			t.Fatal(err)
		}
		return r.Srv.RPCs("resources/read") == 2
	})
}

// Every listing is cached as tools/list is: prompts, resources, resource
// templates, whole or by page. An invalid call option fails the call, cache
// or not.
func TestEveryListingIsCached(t *testing.T) {
	r := rig.New(t, cached(mcp.CacheScopePrivate), false)
	for range 5 {
		if _, err := r.C.ListPrompts(r.Ctx(), mcp.ListPromptsRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.C.ListResources(r.Ctx(), mcp.ListResourcesRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.C.ListResourceTemplates(r.Ctx(), mcp.ListResourceTemplatesRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.C.ListToolsByPage(r.Ctx(), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"prompts/list", "resources/list", "resources/templates/list", "tools/list"} {
		if n := r.Srv.RPCs(m); n != 1 {
			t.Errorf("5 listings within the ttl sent %d %s, want 1", n, m)
		}
	}
	ctx := client.WithCallOptions(r.Ctx(), client.ProgressTimeout(-1))
	if _, err := r.C.ListPrompts(ctx, mcp.ListPromptsRequest{}); err == nil {
		t.Error("a listing with an invalid call option was answered from the cache")
	}
}
