package restarts

import (
	"iter"
	"log/slog"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// An iteration that meets a re-initialization lists again from the start
// rather than going on with the old server's cursor, and yields each item
// once: every tool, prompt, resource and template, across a restart made
// in the middle of the loop.
func TestIteratorsAcrossRestart(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			logs := &rig.LogRecorder{}
			r := rig.New(t, testserver.Config{Era: era, PageSize: 2}, false, client.WithLogger(logs.Logger()))
			r.Start()
			ctx := r.Ctx()
			restart := func() {
				if err := r.Srv.Restart(); err != nil {
					t.Fatal(err)
				}
			}
			tools := collect(t, r.C.IterTools(ctx, mcp.ListToolsRequest{}), func(t mcp.Tool) string { return t.Name }, restart)
			want := []string{"add", "ask", "echo", "increment", "profile", "progress", "progressRead", "slow", "work"}
			if !slices.Equal(tools, want) {
				t.Errorf("IterTools across a restart yielded %v, want %v", tools, want)
			}
			if era == testserver.SessionEra && !logs.Has(slog.LevelInfo, "listing again from the start", "method", "tools/list") {
				t.Errorf("the listing did not start over after the re-initialization:\n%s", logs)
			}
			prompts := collect(t, r.C.IterPrompts(ctx, mcp.ListPromptsRequest{}), func(p mcp.Prompt) string { return p.Name }, restart)
			if !slices.Equal(prompts, testserver.Prompts) {
				t.Errorf("IterPrompts yielded %v, want %v", prompts, testserver.Prompts)
			}
			templates := collect(t, r.C.IterResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}),
				func(rt mcp.ResourceTemplate) string { return rt.URITemplate.Raw() }, restart)
			if !slices.Equal(templates, testserver.ResourceTemplates) {
				t.Errorf("IterResourceTemplates yielded %v, want %v", templates, testserver.ResourceTemplates)
			}
			resources := collect(t, r.C.IterResources(ctx, mcp.ListResourcesRequest{}), func(r mcp.Resource) string { return r.URI }, restart)
			if !slices.Equal(resources, []string{testserver.CounterURI}) {
				t.Errorf("IterResources yielded %v", resources)
			}
			// Breaking out of the loop stops the requests.
			r.MustEcho("the session is re-initialized, and its tools listed")
			before := r.Srv.RPCs("tools/list")
			for range r.C.IterTools(ctx, mcp.ListToolsRequest{}) {
				break
			}
			if got := r.Srv.RPCs("tools/list") - before; got != 1 {
				t.Errorf("breaking after the first tool sent %d tools/list, want 1", got)
			}
		})
	}
}

// collect runs an iteration to its end, calling between once, after the
// first item, and returns the keys yielded, sorted, failing on duplicates
// and errors.
func collect[T any](t *testing.T, seq iter.Seq2[T, error], key func(T) string, between func()) []string {
	t.Helper()
	var keys []string
	for item, err := range seq {
		if err != nil {
			t.Fatalf("iteration failed after %v: %v", keys, err)
		}
		k := key(item)
		if slices.Contains(keys, k) {
			t.Fatalf("%q yielded twice", k)
		}
		keys = append(keys, k)
		if len(keys) == 1 {
			between()
		}
	}
	slices.Sort(keys)
	return keys
}

// A pool's sessions opened while a listing runs are not re-initializations:
// the listing goes through without starting over. (Whether the pool is
// still filling when the second page is asked for is up to the scheduler;
// the test holds either way.)
func TestIteratorOverAFillingPool(t *testing.T) {
	logs := &rig.LogRecorder{}
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra, PageSize: 1}, false,
		client.WithPoolSize(4), client.WithLogger(logs.Logger()))
	var names []string
	for tool, err := range r.C.IterTools(r.Ctx(), mcp.ListToolsRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if len(names) != 9 {
		t.Errorf("IterTools over a pool of 4 yielded %v", names)
	}
	if logs.Has(slog.LevelInfo, "listing again from the start", "method", "tools/list") {
		t.Errorf("the listing started over with no session lost:\n%s", logs)
	}
}
