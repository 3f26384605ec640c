package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/fleet"
	"github.com/resilientmcp/resilientmcp/test/internal/everything"
)

// everythingStdio is server-everything over stdio, or a skip without node.
func everythingStdio(t *testing.T) fleet.ServerConfig {
	t.Helper()
	if err := everything.Installed(); err != nil {
		t.Skipf("server-everything: %v", err)
	}
	command, args := everything.StdioCommand()
	return fleet.ServerConfig{Command: command, Args: args}
}

// startFleet makes and starts a fleet of cfg, closed when the test ends,
// and returns Start's error and how long it took.
func startFleet(t *testing.T, cfg fleet.Config, opts ...fleet.Option) (*fleet.Fleet, time.Duration, error) {
	t.Helper()
	f, err := fleet.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ctx := testContext(t, 30*time.Second)
	began := time.Now()
	err = f.Start(ctx)
	return f, time.Since(began), err
}

func toolNames(t *testing.T, f *fleet.Fleet) []string {
	t.Helper()
	res, err := f.ListTools(testContext(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func status(f *fleet.Fleet, name string) fleet.ServerStatus {
	for _, s := range f.Status() {
		if s.Name == name {
			return s
		}
	}
	return fleet.ServerStatus{}
}

// A header's ${env:TOKEN} reaches the server, which refuses any request
// without it, and appears in no log line, at debug level, of the fleet or
// its clients.
func TestHeaderSecretReachesServerAndNoLog(t *testing.T) {
	const token = "tok-3f9a1c77e2"
	t.Setenv("FLEET_TEST_TOKEN", token)
	srv := startMCPGo(t, "guarded", "", "X-Api-Key="+token)
	file := fmt.Sprintf(`{"mcpServers": {"guarded": {"url": %q, "headers": {"X-Api-Key": "${env:FLEET_TEST_TOKEN}"}}}}`, srv.URL())
	cfg, err := fleet.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	logger.Debug("config", "cfg", cfg)
	f, _, err := startFleet(t, cfg, fleet.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.CallTool(testContext(t, 10*time.Second), call("guarded__whoami", nil))
	if err != nil || resultText(res) != "guarded" {
		t.Fatalf("call through the guard: %v %v", res, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The header is what got it through: without it the server refuses.
	bare, err := fleet.New(fleet.Config{Servers: map[string]fleet.ServerConfig{"guarded": {URL: srv.URL(), Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if err := bare.Start(testContext(t, 3*time.Second)); err == nil {
		t.Error("the server took a request without the header")
	}
	mu.Lock()
	defer mu.Unlock()
	if logs.Len() == 0 {
		t.Fatal("nothing logged at debug level: the check would prove nothing")
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the token is in the log:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// partialConfig is server-everything over stdio, go-sdk's and mcp-go's
// servers over HTTP, a command that does not exist and a URL nobody
// listens on.
func partialConfig(t *testing.T, deadURL string) (fleet.Config, *proc, *proc) {
	goSDK, mcpGo := startGoSDK(t), startMCPGo(t, "mcpgo", "", "")
	return fleet.Config{Servers: map[string]fleet.ServerConfig{
		"everything": everythingStdio(t),
		"gosdk":      {Type: "http", URL: goSDK.URL()},
		"mcpgo":      {Type: "streamable-http", URL: mcpGo.URL()},
		"legacy":     {Type: "sse", URL: mcpGo.SSEURL()},
		"nocommand":  {Command: "/nonexistent/fleet-test-server"},
		"deadurl":    {URL: deadURL},
	}}, goSDK, mcpGo
}

// One failing server never takes the others down: Start returns once the
// live servers are ready, without waiting out the broken ones' retries;
// ListTools has every live server's tools; Status names the broken two and
// why. Marked required, the dead URL fails Start, naming it.
func TestPartialFailure(t *testing.T) {
	cfg, _, _ := partialConfig(t, "http://"+freeAddr(t)+"/mcp")
	f, took, err := startFleet(t, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start returned after %v", took)
	names := toolNames(t, f)
	for _, want := range []string{"everything__echo", "gosdk__greet", "gosdk__greet__structured_", "mcpgo__echo", "mcpgo__whoami", "legacy__whoami"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not listed: %v", want, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "nocommand") || strings.HasPrefix(n, "deadurl") {
			t.Errorf("a broken server's tool listed: %s", n)
		}
	}
	for _, s := range f.Status() {
		broken := s.Name == "nocommand" || s.Name == "deadurl"
		if broken != (s.Err != nil) || broken != (s.Tools == 0) {
			t.Errorf("status %+v", s)
		}
		if broken {
			t.Logf("%s: %v", s.Name, s.Err)
		}
	}
	if err := status(f, "nocommand").Err; err == nil || !strings.Contains(err.Error(), "fleet-test-server") {
		t.Errorf("nocommand's cause: %v", err)
	}
	if err := status(f, "deadurl").Err; err == nil || !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("deadurl's cause: %v", err)
	}
	// A call to a broken server's tool fails at once; another server's works.
	for _, tool := range []string{"mcpgo__echo", "legacy__echo", "gosdk__greet", "everything__echo"} {
		if _, err := f.CallTool(testContext(t, 10*time.Second), call(tool, map[string]any{"text": "hi", "name": "x", "message": "hi"})); err != nil {
			t.Errorf("%s: %v", tool, err)
		}
	}
	if _, err := f.CallTool(testContext(t, 10*time.Second), call("deadurl__echo", nil)); !errors.Is(err, fleet.ErrUnknownTool) {
		t.Errorf("a tool no server lists: %v", err)
	}

	t.Run("required", func(t *testing.T) {
		cfg := fleet.Config{Servers: map[string]fleet.ServerConfig{
			"mcpgo":   cfg.Servers["mcpgo"],
			"deadurl": {URL: cfg.Servers["deadurl"].URL, Required: true},
		}}
		f, err := fleet.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		err = f.Start(testContext(t, 2*time.Second))
		var se *fleet.ServerError
		if !errors.As(err, &se) || se.Server != "deadurl" || !strings.Contains(err.Error(), `"deadurl"`) {
			t.Fatalf("Start: %v, want a *ServerError naming deadurl", err)
		}
	})
}

// A server that was down when the fleet started joins when it comes up: its
// tools appear on the backoff's next attempt, with one WithToolsChanged.
func TestLateServer(t *testing.T) {
	addr := freeAddr(t)
	live := startMCPGo(t, "live", "", "")
	var changes atomic.Int32
	f, _, err := startFleet(t, fleet.Config{Servers: map[string]fleet.ServerConfig{
		"live": {URL: live.URL()},
		"late": {URL: "http://" + addr + "/mcp"},
	}}, fleet.WithToolsChanged(func() { changes.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the burst of Start is over
	before := changes.Load()
	if status(f, "late").Err == nil {
		t.Fatal("late is ready before it listens")
	}
	began := time.Now()
	startMCPGo(t, "late", addr, "")
	eventually(t, 15*time.Second, "late's tools listed", func() error {
		if !slices.Contains(toolNames(t, f), "late__whoami") {
			return errNot
		}
		return nil
	})
	t.Logf("late joined %v after it listened", time.Since(began))
	time.Sleep(300 * time.Millisecond) // a second call would have come
	if got := changes.Load() - before; got != 1 {
		t.Errorf("WithToolsChanged called %d times when late joined, want 1", got)
	}
	res, err := f.CallTool(testContext(t, 10*time.Second), call("late__whoami", nil))
	if err != nil || resultText(res) != "late" {
		t.Errorf("call to late: %v %v", res, err)
	}
}

// An HTTP server SIGKILLed after listing: its tools stay listed, Stale; a
// call to one under a 30 s deadline ends ErrUnavailable without waiting it
// out; the other servers' calls, from 16 goroutines throughout, all
// succeed; restarted, it is used again.
func TestOutage(t *testing.T) {
	victim, other := startMCPGo(t, "victim", "", ""), startMCPGo(t, "other", "", "")
	goSDK := startGoSDK(t)
	f, _, err := startFleet(t, fleet.Config{Servers: map[string]fleet.ServerConfig{
		"victim": {URL: victim.URL()},
		"other":  {URL: other.URL()},
		"gosdk":  {URL: goSDK.URL()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var calls, failures atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				req := call("other__echo", map[string]any{"text": fmt.Sprint(g, "-", i)})
				want := fmt.Sprintf("other: %d-%d", g, i)
				if g%2 == 1 {
					req, want = call("gosdk__greet", map[string]any{"name": fmt.Sprint(g)}), "Hi "+fmt.Sprint(g)
				}
				res, err := f.CallTool(ctx, req)
				cancel()
				calls.Add(1)
				if err != nil || !strings.Contains(resultText(res), want) {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%v %v", res, err))
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	victim.kill()

	names := toolNames(t, f)
	if !slices.Contains(names, "victim__whoami") {
		t.Errorf("victim's tools not listed after its SIGKILL: %v", names)
	}
	if st := status(f, "victim"); !st.Stale || st.Tools == 0 {
		t.Errorf("victim's status: %+v, want Stale with its tools", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	began := time.Now()
	_, err = f.CallTool(ctx, call("victim__whoami", nil))
	took := time.Since(began)
	cancel()
	if !errors.Is(err, client.ErrUnavailable) || took > 5*time.Second {
		t.Errorf("call to the killed server: %v after %v, want ErrUnavailable at once", err, took)
	}
	t.Logf("the call to the killed server ended after %v: %v", took, err)

	victim.start()
	eventually(t, 15*time.Second, "victim used again", func() error {
		res, err := f.CallTool(testContext(t, 5*time.Second), call("victim__whoami", nil))
		if err != nil {
			return err
		}
		if resultText(res) != "victim" {
			return fmt.Errorf("%v", res)
		}
		return nil
	})
	toolNames(t, f)
	if st := status(f, "victim"); st.Stale || st.Err != nil {
		t.Errorf("victim's status after it answered and was listed again: %+v", st)
	}
	close(stop)
	wg.Wait()
	if failures.Load() != 0 || calls.Load() < 16 {
		t.Errorf("%d of %d calls to the other servers failed; first: %v", failures.Load(), calls.Load(), firstErr.Load())
	}
	t.Logf("%d calls to the other servers, all succeeded", calls.Load())
}

// Names: the same tool name on two servers reaches each its own server; a
// 100-character name comes out within 64 and routes; the names are the
// same after the fleet is started again with the servers answering in
// another order.
func TestNames(t *testing.T) {
	a, b := startMCPGo(t, "a", "", ""), startMCPGo(t, "b", "", "")
	cfg := fleet.Config{Servers: map[string]fleet.ServerConfig{"a": {URL: a.URL()}, "b": {URL: b.URL()}}}
	f, _, err := startFleet(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range f.Status() {
		if st.Err != nil {
			t.Fatalf("%s not ready after Start: %v", st.Name, st.Err)
		}
	}
	res, err := f.ListTools(testContext(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	var long []mcp.Tool
	for _, tool := range res.Tools {
		first = append(first, tool.Name)
		if len(tool.Name) > fleet.MaxNameLen {
			t.Errorf("%q is longer than %d", tool.Name, fleet.MaxNameLen)
		}
		if tool.Meta.AdditionalFields[fleet.NameMetaKey] == longTool {
			long = append(long, tool)
		}
	}
	for _, srv := range []string{"a", "b"} {
		res, err := f.CallTool(testContext(t, 10*time.Second), call(srv+"__whoami", nil))
		if err != nil || resultText(res) != srv {
			t.Errorf("%s__whoami: %v %v", srv, res, err)
		}
	}
	if len(long) != 2 {
		t.Fatalf("%d tools named %q listed, want 2", len(long), longTool)
	}
	for _, tool := range long {
		srv := tool.Meta.AdditionalFields[fleet.ServerMetaKey].(string)
		if _, err := f.CallTool(testContext(t, 10*time.Second), call(tool.Name, nil)); err != nil {
			t.Errorf("%s (%s's long tool): %v", tool.Name, srv, err)
		}
	}
	f.Close()

	// Again, b answering first: a's first process is gone, its second comes
	// up after the fleet started.
	a.kill()
	f2, _, err := startFleet(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.start()
	eventually(t, 15*time.Second, "a back", func() error {
		if len(toolNames(t, f2)) != len(first) {
			return errNot
		}
		return nil
	})
	if again := toolNames(t, f2); !slices.Equal(again, first) {
		t.Errorf("names changed across restarts:\n%v\n%v", first, again)
	}
}

// A server that adds a tool and sends notifications/tools/list_changed: the
// new tool is in the next ListTools, and WithToolsChanged fired.
func TestListChanged(t *testing.T) {
	srv := startMCPGo(t, "grower", "", "")
	changed := make(chan struct{}, 8)
	f, _, err := startFleet(t, fleet.Config{Servers: map[string]fleet.ServerConfig{"grower": {URL: srv.URL()}}},
		fleet.WithToolsChanged(func() { changed <- struct{}{} }))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed: // Start's
	case <-time.After(5 * time.Second):
		t.Fatal("no WithToolsChanged for the server reached")
	}
	if slices.Contains(toolNames(t, f), "grower__grown") {
		t.Fatal("grown before grow")
	}
	if _, err := f.CallTool(testContext(t, 10*time.Second), call("grower__grow", nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no WithToolsChanged after tools/list_changed")
	}
	if names := toolNames(t, f); !slices.Contains(names, "grower__grown") {
		t.Errorf("grown not listed: %v", names)
	}

	// A burst of five notifications is one WithToolsChanged.
	time.Sleep(200 * time.Millisecond)
	for len(changed) > 0 {
		<-changed
	}
	if _, err := f.CallTool(testContext(t, 10*time.Second), call("grower__burst", nil)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the burst's tools listed", func() error {
		if !slices.Contains(toolNames(t, f), "grower__burst4") {
			return errNot
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(changed); n != 1 {
		t.Errorf("WithToolsChanged called %d times for a burst of five list changes, want 1", n)
	}
}

// Close ends every server in parallel: no process of a stdio server is left
// in /proc (goleak, in TestMain, finds no goroutine left).
func TestCloseLeavesNoProcess(t *testing.T) {
	marker := fmt.Sprintf("FLEET_TEST_MARKER=%d-%d", os.Getpid(), time.Now().UnixNano())
	name, value, _ := strings.Cut(marker, "=")
	ev := everythingStdio(t)
	ev.Env = map[string]string{name: value}
	ev2 := ev
	f, _, err := startFleet(t, fleet.Config{Servers: map[string]fleet.ServerConfig{"one": ev, "two": ev2}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(processesWith(marker)); n < 2 {
		t.Fatalf("%d processes with the marker before Close, want 2 or more", n)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("processes left after Close: %v", left)
	}
}

// processesWith lists the PIDs whose environment holds entry.
func processesWith(entry string) []string {
	dirs, _ := os.ReadDir("/proc")
	var pids []string
	for _, d := range dirs {
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(env), "\x00"), entry) {
			pids = append(pids, d.Name())
		}
	}
	return pids
}

// Prompts are merged and named as tools are; resources keep their URIs and
// are read from the server that listed them; neither needs a listing first.
func TestPromptsAndResources(t *testing.T) {
	goSDK, mcpGo := startGoSDK(t), startMCPGo(t, "mcpgo", "", "")
	f, _, err := startFleet(t, fleet.Config{Servers: map[string]fleet.ServerConfig{
		"gosdk": {URL: goSDK.URL()}, "mcpgo": {URL: mcpGo.URL()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 20*time.Second)
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = "gosdk__greet", map[string]string{"name": "fleet"}
	if res, err := f.GetPrompt(ctx, req); err != nil || len(res.Messages) == 0 {
		t.Fatalf("GetPrompt before any listing: %v %v", res, err)
	}
	prompts, err := f.ListPrompts(ctx)
	if err != nil || !slices.ContainsFunc(prompts.Prompts, func(p mcp.Prompt) bool { return p.Name == "gosdk__greet" }) {
		t.Fatalf("ListPrompts: %+v %v", prompts, err)
	}
	resources, err := f.ListResources(ctx)
	if err != nil || len(resources.Resources) == 0 {
		t.Fatalf("ListResources: %+v %v", resources, err)
	}
	read := mcp.ReadResourceRequest{}
	read.Params.URI = resources.Resources[0].URI
	if res, err := f.ReadResource(ctx, read); err != nil || len(res.Contents) == 0 {
		t.Errorf("ReadResource %s: %v %v", read.Params.URI, res, err)
	}
	read.Params.URI = "nowhere://x"
	if _, err := f.ReadResource(ctx, read); !errors.Is(err, fleet.ErrUnknownResource) {
		t.Errorf("unknown URI: %v", err)
	}
}

// A server back from a restart with another list of tools: the next
// ListTools has it, and WithToolsChanged fired.
func TestServerBackWithAnotherList(t *testing.T) {
	srv := startMCPGo(t, "v", "", "")
	var changes atomic.Int32
	f, _, err := startFleet(t, fleet.Config{Servers: map[string]fleet.ServerConfig{"v": {URL: srv.URL()}}},
		fleet.WithToolsChanged(func() { changes.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	before := changes.Load()
	srv.kill()
	srv.env = append(srv.env, helperExtraEnv+"=1")
	srv.start()
	eventually(t, 15*time.Second, "extra listed", func() error {
		if !slices.Contains(toolNames(t, f), "v__extra") {
			return errNot
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	if changes.Load() == before {
		t.Error("no WithToolsChanged for the server's new list")
	}
	if res, err := f.CallTool(testContext(t, 10*time.Second), call("v__extra", nil)); err != nil || resultText(res) != "extra" {
		t.Errorf("v__extra: %v %v", res, err)
	}
}

// allowedTools and disabledTools leave tools out of the list and out of
// reach; WithToolName names the rest; WithClientOptions reaches the client.
func TestToolFiltersAndNaming(t *testing.T) {
	srv := startMCPGo(t, "f", "", "")
	var asked []string
	var mu sync.Mutex
	f, _, err := startFleet(t, fleet.Config{Servers: map[string]fleet.ServerConfig{"files": {
		URL: srv.URL(), AllowedTools: []string{"whoami", "echo"}, DisabledTools: []string{"echo"},
	}}},
		fleet.WithToolName(func(server, tool string) string { return tool + "@" + server }),
		fleet.WithClientOptions(func(server string) []client.Option {
			mu.Lock()
			asked = append(asked, server)
			mu.Unlock()
			return []client.Option{client.WithClientInfo(mcp.Implementation{Name: "agent-x", Version: "1"})}
		}))
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(t, f); !slices.Equal(names, []string{"whoami@files"}) {
		t.Errorf("listed %v, want only whoami@files", names)
	}
	if _, err := f.CallTool(testContext(t, 10*time.Second), call("echo@files", nil)); !errors.Is(err, fleet.ErrUnknownTool) {
		t.Errorf("a disabled tool: %v", err)
	}
	if res, err := f.CallTool(testContext(t, 10*time.Second), call("whoami@files", nil)); err != nil || resultText(res) != "f" {
		t.Errorf("whoami@files: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(asked, []string{"files"}) {
		t.Errorf("WithClientOptions asked for %v", asked)
	}
}
