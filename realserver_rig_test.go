package resilientmcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/everything"
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/gosdkserver"
)

// The rig of realserver_test.go: the servers nobody here wrote, behind one
// interface so that every scenario runs against each of them.

// kill is how a restart ends the server's process.
type kill int

const (
	sigterm kill = iota // graceful
	sigkill             // abrupt
)

func (k kill) String() string { return [...]string{"SIGTERM", "SIGKILL"}[k] }

var kills = []kill{sigterm, sigkill}

// realServer is a server nobody here wrote, driven as its deployment would
// be, and asked afterwards what it executed.
type realServer interface {
	url() string
	stateless() bool
	restart(t *testing.T, how kill)
	// freeze and thaw are SIGSTOP and SIGCONT.
	freeze(t *testing.T)
	thaw(t *testing.T)
	// echo is a call of the read-only echo tool and the answer it expects.
	echo(text string) (req mcp.CallToolRequest, want string)
	// unsafe is a call of a tool that is neither read-only nor idempotent,
	// carrying marker; ran says how many times the calls with each marker
	// ran on the server (an upper bound where the server cannot count).
	unsafe(marker string) mcp.CallToolRequest
	ran(t *testing.T) map[string]int
	// long is a read-only call that runs about 1.5s and reports progress
	// to token; longRuns is how many times it ran, -1 if unknown.
	long(token string) mcp.CallToolRequest
	longRuns() int64
	// uri is the resource to subscribe to; update has the server announce
	// a change of it, with a call through c where the server needs one.
	uri() string
	update(t *testing.T, c *client.ResilientClient)
}

// goSDK is the official Go SDK's server, in process (gosdkserver).
type goSDK struct{ srv *gosdkserver.Server }

func startGoSDK(t *testing.T, cfg gosdkserver.Config) *goSDK {
	t.Helper()
	srv, err := gosdkserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &goSDK{srv}
}

func (g *goSDK) url() string     { return g.srv.URL() }
func (g *goSDK) stateless() bool { return false }

func (g *goSDK) restart(t *testing.T, how kill) {
	t.Helper()
	stop := gosdkserver.Graceful
	if how == sigkill {
		stop = gosdkserver.Abrupt
	}
	if err := g.srv.Restart(stop); err != nil {
		t.Fatal(err)
	}
}

func (g *goSDK) freeze(*testing.T) { g.srv.Freeze() }
func (g *goSDK) thaw(*testing.T)   { g.srv.Thaw() }

func (g *goSDK) echo(text string) (mcp.CallToolRequest, string) {
	return toolRequest("echo", map[string]any{"text": text}), text
}

func (g *goSDK) unsafe(marker string) mcp.CallToolRequest {
	return toolRequest("increment", map[string]any{"id": marker})
}

func (g *goSDK) ran(*testing.T) map[string]int { return g.srv.RunsByID() }

func (g *goSDK) long(token string) mcp.CallToolRequest {
	req := toolRequest("long", map[string]any{"millis": 1500})
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	return req
}

func (g *goSDK) longRuns() int64 { return g.srv.Runs("long") }
func (g *goSDK) uri() string     { return gosdkserver.CounterURI }

func (g *goSDK) update(*testing.T, *client.ResilientClient) { g.srv.UpdateResource() }

// goSDKStateless is the same server with StreamableHTTPOptions.Stateless.
type goSDKStateless struct{ *goSDK }

func (goSDKStateless) stateless() bool { return true }

// serverEverything is the TypeScript reference server, a node child process,
// behind a fault proxy that only taps: it forwards every byte and records
// them, since the server cannot be made to count its executions.
type serverEverything struct {
	srv   *everything.Server
	proxy *faultproxy.Proxy
}

func startEverything(t *testing.T) *serverEverything {
	t.Helper()
	if err := everything.Installed(); err != nil {
		t.Skipf("server-everything: %v", err)
	}
	srv, err := everything.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	proxy, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	proxy.SetTap(true)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server-everything's output: %s", srv.LogPath())
		}
	})
	return &serverEverything{srv, proxy}
}

func (e *serverEverything) url() string     { return e.proxy.URL("/mcp") }
func (e *serverEverything) stateless() bool { return false }

func (e *serverEverything) restart(t *testing.T, how kill) {
	t.Helper()
	sig := syscall.SIGTERM
	if how == sigkill {
		sig = syscall.SIGKILL
	}
	if err := e.srv.Restart(sig); err != nil {
		t.Fatal(err)
	}
}

func (e *serverEverything) freeze(t *testing.T) {
	if err := e.srv.Stop(); err != nil {
		t.Fatal(err)
	}
}

func (e *serverEverything) thaw(t *testing.T) {
	if err := e.srv.Cont(); err != nil {
		t.Fatal(err)
	}
}

func (e *serverEverything) echo(text string) (mcp.CallToolRequest, string) {
	return toolRequest("echo", map[string]any{"message": text}), "Echo: " + text
}

// unsafe is toggle-simulated-logging, annotated neither read-only nor
// idempotent: it switches the session's simulated log messages on or off.
// Its schema has no arguments and the SDK strips unknown ones, so the
// marker changes nothing on the server and travels in the request body for
// ran to find.
func (e *serverEverything) unsafe(marker string) mcp.CallToolRequest {
	return toolRequest("toggle-simulated-logging", map[string]any{"marker": marker})
}

// ran counts the requests carrying marker that the server did not refuse
// unread (a 4xx: the TS SDK's 400 to an unknown session, for one), reading
// the tapped connections as the HTTP/1.1 exchanges they are: requests and
// responses in order, bodies with Content-Length or chunked. A request whose
// answer never came counts: it may have run.
func (e *serverEverything) ran(t *testing.T) map[string]int {
	t.Helper()
	runs := map[string]int{}
	e.exchanges(func(body []byte, status int) {
		var msg struct {
			Params struct {
				Arguments struct {
					Marker string `json:"marker"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Params.Arguments.Marker != "" && (status < 400 || status >= 500) {
			runs[msg.Params.Arguments.Marker]++
		}
	})
	return runs
}

// exchanges calls f with the body of every request on the tapped
// connections and the status of its answer, 0 if none came whole.
func (e *serverEverything) exchanges(f func(body []byte, status int)) {
	for _, tap := range e.proxy.Tapped() {
		reqs := bufio.NewReader(bytes.NewReader(tap.Sent))
		resps := bufio.NewReader(bytes.NewReader(tap.Received))
		for {
			req, err := http.ReadRequest(reqs)
			if err != nil {
				break
			}
			body, _ := io.ReadAll(req.Body)
			status := 0
			if resp, err := http.ReadResponse(resps, req); err == nil {
				if _, err := io.Copy(io.Discard, resp.Body); err == nil {
					status = resp.StatusCode
				}
			}
			f(body, status)
		}
	}
}

func (e *serverEverything) long(token string) mcp.CallToolRequest {
	req := toolRequest("trigger-long-running-operation", map[string]any{"duration": 1.5, "steps": 5})
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	return req
}

func (e *serverEverything) longRuns() int64 { return -1 }

// uri is one of the server's static resources; its subscriptions accept
// any URI.
func (e *serverEverything) uri() string { return "demo://resource/static/document/architecture.md" }

// update needs a call: server-everything sends resources/updated only to
// sessions that called toggle-subscriber-updates (at once, then every 5s),
// and forgets that with the process. Callers make it after checking what
// the client did on its own.
func (e *serverEverything) update(t *testing.T, c *client.ResilientClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CallTool(ctx, toolRequest("toggle-subscriber-updates", map[string]any{})); err != nil {
		t.Errorf("toggle-subscriber-updates: %v", err)
	}
}

// answered counts the JSON-RPC requests of method the server answered
// with 2xx.
func (e *serverEverything) answered(method string) int {
	needle := []byte(`"method":"` + method + `"`)
	n := 0
	e.exchanges(func(body []byte, status int) {
		if bytes.Contains(body, needle) && status/100 == 2 {
			n++
		}
	})
	return n
}

// target is one server under test, by name.
type target struct {
	name  string
	start func(t *testing.T) realServer
}

var (
	goSDKTarget = target{"go-sdk", func(t *testing.T) realServer {
		return startGoSDK(t, gosdkserver.Config{})
	}}
	// With an event store, SSE responses carry event ids and can be
	// resumed; the store dies with the process.
	goSDKEventsTarget = target{"go-sdk-eventstore", func(t *testing.T) realServer {
		return startGoSDK(t, gosdkserver.Config{EventStore: true})
	}}
	goSDKStatelessTarget = target{"go-sdk-stateless", func(t *testing.T) realServer {
		return goSDKStateless{startGoSDK(t, gosdkserver.Config{Stateless: true})}
	}}
	everythingTarget = target{"server-everything", func(t *testing.T) realServer {
		return startEverything(t)
	}}
)

// realClient is a client of srv, closed with the test.
func realClient(t *testing.T, srv realServer, opts ...client.Option) *client.ResilientClient {
	t.Helper()
	c, err := client.New(srv.url(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// tally sorts the outcomes of calls the way the error contract does, and
// keeps one message of each kind for the report.
type tally struct {
	mu                            sync.Mutex
	ok, unknown, unavail, untyped int
	msgs                          map[string]int
}

// add records err and returns its kind.
func (ty *tally) add(err error) string {
	kind := errKind(err)
	ty.mu.Lock()
	defer ty.mu.Unlock()
	switch kind {
	case "ok":
		ty.ok++
		return kind
	case "outcome unknown":
		ty.unknown++
	case "unavailable":
		ty.unavail++
	default:
		ty.untyped++
	}
	if ty.msgs == nil {
		ty.msgs = map[string]int{}
	}
	ty.msgs[kind+": "+err.Error()]++
	return kind
}

func errKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, client.ErrOutcomeUnknown):
		return "outcome unknown"
	case errors.Is(err, client.ErrUnavailable):
		return "unavailable"
	}
	return "untyped"
}

func (ty *tally) total() int {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	return ty.ok + ty.unknown + ty.unavail + ty.untyped
}

func (ty *tally) String() string {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d ok, %d outcome unknown, %d unavailable, %d untyped", ty.ok, ty.unknown, ty.unavail, ty.untyped)
	msgs := make([]string, 0, len(ty.msgs))
	for m := range ty.msgs {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n  %dx %s", ty.msgs[m], m)
	}
	return b.String()
}

// call makes req within d.
func call(c *client.ResilientClient, req mcp.CallToolRequest, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return callToolRequest(ctx, c, req)
}
