package listings

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/test/internal/fastmcp"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Issue 43: a listing is the server's answer or an error. The servers here
// are processes, killed with SIGKILL and replaced on the same port by
// another program: this test binary re-executed as a sessionless mcp-go
// server (TestHelperSessionlessServer), or FastMCP in stateless mode
// (test/internal/fastmcp). Both read what they are from the same
// environment:
//
//	SERVER_NAME  the serverInfo name
//	PROMPT       the one prompt's name; RESOURCE the one resource's URI
//	READ_ONLY    "1": the tool mark is annotated readOnlyHint
//	RUNS_FILE    mark appends a line to it each time it runs
//	DIE_ON_MARK  "1": mark's process dies (SIGKILL) once it has run
//	PORT         the port on 127.0.0.1; the endpoint is /mcp
//
// and, for mcp-go only: ERA ("session": 2025-11-25 and older, no
// Mcp-Session-Id; else the 2026-07-28 era) and FAIL_LIST ("1": every
// tools/list after the first is answered with JSON-RPC -32603).

// serverProc is one server process.
type serverProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// program is how a kind of server is started.
type program struct {
	name  string
	start func(t *testing.T) (string, []string) // the command; skips if it cannot run here
	env   []string
}

var (
	mcpGoSessionEra = program{name: "mcp-go stateless 2025-11-25", start: helperCommand, env: []string{"ERA=session"}}
	mcpGoStateless  = program{name: "mcp-go 2026-07-28", start: helperCommand, env: []string{"ERA=stateless"}}
	fastMCP         = program{name: "FastMCP stateless", start: func(t *testing.T) (string, []string) {
		if err := fastmcp.Installed(); err != nil {
			t.Skipf("FastMCP: %v", err)
		}
		return fastmcp.Command()
	}}
)

func helperCommand(*testing.T) (string, []string) {
	return os.Args[0], []string{"-test.run=^TestHelperSessionlessServer$", "-test.count=1"}
}

// startServer starts p on port with env, and returns once it accepts
// connections; it is killed when the test ends.
func startServer(t *testing.T, p program, port int, env ...string) *serverProc {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	sp, err := spawn(t, p, port, log, env...)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for range 750 { // 15 s
		select {
		case <-sp.exited:
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("%s exited before listening on %s:\n%s", p.name, addr, out)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return sp
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on %s in time", p.name, addr)
	return nil
}

// spawn starts p on port with env, its output to log, killed when the
// test ends. It may be called from any goroutine.
func spawn(t *testing.T, p program, port int, log *os.File, env ...string) (*serverProc, error) {
	name, args := p.start(t)
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(append(os.Environ(), "LISTINGS_SESSIONLESS_SERVER=1", "PORT="+strconv.Itoa(port)), p.env...), env...)
	if log != nil {
		cmd.Stdout, cmd.Stderr = log, log
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sp := &serverProc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(sp.exited)
	}()
	t.Cleanup(sp.kill)
	return sp, nil
}

// kill ends the process with SIGKILL and waits for it.
func (sp *serverProc) kill() {
	_ = sp.cmd.Process.Signal(syscall.SIGKILL)
	<-sp.exited
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestHelperSessionlessServer is not a test: it is a sessionless mcp-go
// server when LISTINGS_SESSIONLESS_SERVER is set (startServer), serving
// until it is killed.
func TestHelperSessionlessServer(t *testing.T) {
	if os.Getenv("LISTINGS_SESSIONLESS_SERVER") == "" {
		t.Skip("a server process for the sessionless tests")
	}
	env := os.Getenv
	s := server.NewMCPServer(env("SERVER_NAME"), "1.0.0",
		server.WithToolCapabilities(false), server.WithPromptCapabilities(false), server.WithResourceCapabilities(false, false))
	s.AddTool(mcp.NewTool("mark", mcp.WithReadOnlyHintAnnotation(env("READ_ONLY") == "1"), mcp.WithDestructiveHintAnnotation(false)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f, err := os.OpenFile(env("RUNS_FILE"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, err
			}
			_, _ = f.WriteString("run\n")
			f.Close()
			if env("DIE_ON_MARK") == "1" {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // ran, and never answers
			}
			return mcp.NewToolResultText("marked"), nil
		})
	s.AddPrompt(mcp.NewPrompt(env("PROMPT")), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello"))}), nil
	})
	s.AddResource(mcp.NewResource(env("RESOURCE"), "r"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "r"}}, nil
	})
	opts := []server.StreamableHTTPOption{server.WithStateLess(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))}
	if env("ERA") == "session" {
		opts = append(opts, server.WithStreamableHTTPProtocolVersions(
			mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326))
	}
	var h http.Handler = server.NewStreamableHTTPServer(s, opts...)
	if env("FAIL_LIST") == "1" {
		h = failListsAfterFirst(h)
	}
	srv := &http.Server{Addr: "127.0.0.1:" + env("PORT"), Handler: h, ReadHeaderTimeout: 10 * time.Second}
	t.Fatal(srv.ListenAndServe())
}

// failListsAfterFirst answers every tools/list after the first with
// JSON-RPC -32603, at once: a server that is plainly up, and fails.
func failListsAfterFirst(next http.Handler) http.Handler {
	var lists atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var id string
		if i := bytes.Index(body, []byte(`"id":`)); i >= 0 {
			id = string(body[i+5:])
			id = id[:strings.IndexAny(id, ",}")]
		}
		if bytes.Contains(body, []byte(`"method":"tools/list"`)) && lists.Add(1) > 1 {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"Internal error"}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serverEnv is the environment of a server named name whose mark is
// read-only or not, counting its runs in runs.
func serverEnv(name string, readOnly bool, runs string) []string {
	ro := "0"
	if readOnly {
		ro = "1"
	}
	return []string{"SERVER_NAME=" + name, "PROMPT=" + name + "-prompt", "RESOURCE=" + name + "://r", "READ_ONLY=" + ro, "RUNS_FILE=" + runs}
}

// listAll lists tools, prompts and resources.
func listAll(ctx context.Context, c *client.ResilientClient) (tools *mcp.ListToolsResult, prompts *mcp.ListPromptsResult, resources *mcp.ListResourcesResult, err error) {
	tools, err = c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, nil, nil, err
	}
	if prompts, err = c.ListPrompts(ctx, mcp.ListPromptsRequest{}); err != nil {
		return nil, nil, nil, err
	}
	resources, err = c.ListResources(ctx, mcp.ListResourcesRequest{})
	return tools, prompts, resources, err
}

// F48, issue 43: with the server SIGKILLed and WithFailFastAfter elapsed, a
// listing is served stale; asked Fresh, it is the server's answer or an
// error: ErrUnavailable, and no listing.
func TestFreshIsNeverAnsweredStale(t *testing.T) {
	port := freePort(t)
	srv := startServer(t, mcpGoSessionEra, port, serverEnv("first", true, filepath.Join(t.TempDir(), "runs"))...)
	c, err := client.New("http://127.0.0.1:"+strconv.Itoa(port)+"/mcp",
		client.WithFailFastAfter(50*time.Millisecond), client.WithBackOff(rig.FastBackOff))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, _, err := listAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	rig.Eventually(t, "the breaker open", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, _ = c.ListTools(client.WithCallOptions(ctx, client.Fresh()), mcp.ListToolsRequest{})
		return c.Stats().FailingFast
	})
	fresh := client.WithCallOptions(ctx, client.Fresh())
	for _, l := range []struct {
		method string
		list   func(context.Context) (*mcp.Meta, bool, error) // the result's _meta, whether there is a result
	}{
		{"tools/list", func(ctx context.Context) (*mcp.Meta, bool, error) {
			res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if res == nil {
				return nil, false, err
			}
			return res.Meta, true, err
		}},
		{"prompts/list", func(ctx context.Context) (*mcp.Meta, bool, error) {
			res, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
			if res == nil {
				return nil, false, err
			}
			return res.Meta, true, err
		}},
		{"resources/list", func(ctx context.Context) (*mcp.Meta, bool, error) {
			res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if res == nil {
				return nil, false, err
			}
			return res.Meta, true, err
		}},
	} {
		meta, got, err := l.list(ctx)
		if _, stale := client.Stale(meta); err != nil || !got || !stale {
			t.Errorf("%s without options while the server is down: result %v, stale %v, %v; want the last listing, marked stale", l.method, got, stale, err)
		}
		meta, got, err = l.list(fresh)
		if !errors.Is(err, client.ErrUnavailable) || got {
			_, stale := client.Stale(meta)
			t.Errorf("%s with Fresh while the server is down: result %v (stale %v), %v; want ErrUnavailable and no listing", l.method, got, stale, err)
		}
	}
}

// Issue 43: a server that is plainly up and answers tools/list with
// -32603 after a first good listing: however often the retry rule resent
// it, the caller gets the server's error, not the last listing marked
// stale.
func TestServersInternalErrorIsNotMaskedStale(t *testing.T) {
	port := freePort(t)
	startServer(t, mcpGoSessionEra, port, append(serverEnv("first", true, filepath.Join(t.TempDir(), "runs")), "FAIL_LIST=1")...)
	c, err := client.New("http://127.0.0.1:" + strconv.Itoa(port) + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if !errors.Is(err, mcp.ErrInternalError) || res != nil {
		t.Errorf("ListTools answered -32603 = %v, %v; want the server's error (mcp.ErrInternalError) and no listing", names(res), err)
	}
	if n := c.Stats().StaleAnswers; n != 0 {
		t.Errorf("%d stale answers, want 0", n)
	}
}

// Issue 43: a sessionless server (no Mcp-Session-Id: mcp-go with
// WithStateLess in the 2025-11-25 era, the 2026-07-28 era, FastMCP's
// stateless mode) is killed and another program, with another name and
// other prompts, is started on its port. The client asks it who it is
// after the outage: once a call has reached it, ServerInfo names it; after
// it is killed in turn, nothing the client knew of the first server is
// served (its listings) or relied on (its annotations: a tool the first
// annotated read-only, the second not, is not replayed).
func TestSessionlessServerReplacedIsAskedWhoItIs(t *testing.T) {
	for _, p := range []program{mcpGoSessionEra, mcpGoStateless, fastMCP} {
		t.Run(p.name, func(t *testing.T) { sessionlessServerReplaced(t, p) })
	}
}

func sessionlessServerReplaced(t *testing.T, p program) {
	port := freePort(t)
	dir := t.TempDir()
	firstRuns, secondRuns := filepath.Join(dir, "first-runs"), filepath.Join(dir, "second-runs")
	first := startServer(t, p, port, serverEnv("first", true, firstRuns)...)
	c, err := client.New("http://127.0.0.1:"+strconv.Itoa(port)+"/mcp",
		client.WithFailFastAfter(50*time.Millisecond), client.WithBackOff(rig.FastBackOff))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, _, _, err := listAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := c.ServerInfo().Name; got != "first" {
		t.Fatalf("ServerInfo names %q, want first", got)
	}

	// The first goes, and the client sees it go (its listings served stale).
	first.kill()
	rig.Eventually(t, "the first server's listing served stale", func() bool {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		return err == nil && staleResult(res.Meta)
	})
	second := startServer(t, p, port, serverEnv("second", false, secondRuns)...)
	var prompts *mcp.ListPromptsResult
	rig.Eventually(t, "a call that reaches the second server", func() bool {
		prompts, err = c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		return err == nil && !staleResult(prompts.Meta)
	})
	if got := c.ServerInfo().Name; got != "second" {
		t.Errorf("once a call reached the second server, ServerInfo names %q, want second", got)
	}
	if len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "second-prompt" {
		t.Errorf("the second server's prompts = %+v, want second-prompt", prompts.Prompts)
	}

	// The second goes in turn: nothing of the first is served.
	second.kill()
	failFast := client.WithCallOptions(ctx, client.FailFast())
	rig.Eventually(t, "the client sees the second server gone", func() bool {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, _ = c.ListPrompts(client.WithCallOptions(ctx, client.Fresh()), mcp.ListPromptsRequest{})
		return c.Stats().FailingFast
	})
	if res, err := c.ListTools(failFast, mcp.ListToolsRequest{}); err == nil {
		t.Errorf("ListTools after the second server went = %v: the first server's listing (the second's tools were never listed)", names(res))
	}
	if res, err := c.ListResources(failFast, mcp.ListResourcesRequest{}); err == nil {
		t.Errorf("ListResources after the second server went = %+v: the first server's listing", res.Resources)
	}
	if res, err := c.ListPrompts(failFast, mcp.ListPromptsRequest{}); err == nil {
		for _, pr := range res.Prompts {
			if pr.Name != "second-prompt" {
				t.Errorf("ListPrompts after the second server went served %q", pr.Name)
			}
		}
	}

	// The first comes back and its mark is listed read-only; it is
	// replaced at once, with no call between, by the second, which dies
	// running mark (which it did not annotate read-only). Started again,
	// the second would run a replay.
	first = startServer(t, p, port, serverEnv("first", true, firstRuns)...)
	rig.Eventually(t, "the first server's tools listed again", func() bool {
		res, err := c.ListTools(client.WithCallOptions(ctx, client.Fresh()), mcp.ListToolsRequest{})
		return err == nil && len(res.Tools) == 1 && client.DefaultRetryToolCall(res.Tools[0])
	})
	first.kill()
	startServer(t, p, port, append(serverEnv("second", false, secondRuns), "DIE_ON_MARK=1")...)
	// A call reaches it (if the client saw the first go, it is back).
	rig.Eventually(t, "a call that reaches the second server", func() bool {
		_, err := c.ListPrompts(client.WithCallOptions(ctx, client.Fresh()), mcp.ListPromptsRequest{})
		return err == nil
	})
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		for range 1000 { // 20 s
			if b, _ := os.ReadFile(secondRuns); len(b) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Not startServer: t.Fatal is for the test's goroutine.
		if _, err := spawn(t, p, port, nil, serverEnv("second", false, secondRuns)...); err != nil {
			t.Error(err)
		}
	}()
	callCtx, callCancel := context.WithTimeout(ctx, 15*time.Second)
	_, err = rig.CallTool(callCtx, c, "mark", map[string]any{})
	callCancel()
	<-restarted
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("mark, whose process died after running it = %v; want ErrOutcomeUnknown", err)
	}
	b, _ := os.ReadFile(secondRuns)
	if n := bytes.Count(b, []byte("\n")); n != 1 {
		t.Errorf("the second server's mark ran %d times, want 1: replayed on the first server's readOnlyHint", n)
	}
	if b, _ := os.ReadFile(firstRuns); len(b) > 0 {
		t.Errorf("the first server's mark ran")
	}
}

func staleResult(meta *mcp.Meta) bool {
	_, stale := client.Stale(meta)
	return stale
}
