package rig

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
	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/test/internal/everything"
	"github.com/resilientmcp/resilientmcp/test/internal/gosdkserver"
)

// The rig of test/realservers: the servers nobody here wrote, behind one
// interface so that every scenario runs against each of them.

// Kill is how a restart ends the server's process.
type Kill int

const (
	sigterm Kill = iota // graceful
	sigkill             // abrupt
)

func (k Kill) String() string { return [...]string{"SIGTERM", "SIGKILL"}[k] }

// Kills are the ways a restart ends the server's process, for tests that
// restart it each way.
var Kills = []Kill{sigterm, sigkill}

// RealServer is a server nobody here wrote, driven as its deployment would
// be, and asked afterwards what it executed.
type RealServer interface {
	URL() string
	stateless() bool
	Restart(t *testing.T, how Kill)
	// freeze and thaw are SIGSTOP and SIGCONT.
	Freeze(t *testing.T)
	Thaw(t *testing.T)
	// echo is a call of the read-only echo tool and the answer it expects.
	Echo(text string) (req mcp.CallToolRequest, want string)
	// unsafe is a call of a tool that is neither read-only nor idempotent,
	// carrying marker; ran says how many times the calls with each marker
	// ran on the server (an upper bound where the server cannot count).
	Unsafe(marker string) mcp.CallToolRequest
	Ran(t *testing.T) map[string]int
	// long is a read-only call that runs about 1.5s and reports progress
	// to token; longRuns is how many times it ran, -1 if unknown.
	Long(token string) mcp.CallToolRequest
	LongRuns() int64
	// uri is the resource to subscribe to; update has the server announce
	// a change of it, with a call through c where the server needs one.
	URI() string
	Update(t *testing.T, c *client.ResilientClient)
}

// goSDK is the official Go SDK's server, in process (gosdkserver).
type goSDK struct{ Srv *gosdkserver.Server }

// StartGoSDK starts the official Go SDK's server in process with cfg,
// closed when the test ends.
func StartGoSDK(t *testing.T, cfg gosdkserver.Config) *goSDK {
	t.Helper()
	srv, err := gosdkserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &goSDK{srv}
}

func (g *goSDK) URL() string     { return g.Srv.URL() }
func (g *goSDK) stateless() bool { return false }

func (g *goSDK) Restart(t *testing.T, how Kill) {
	t.Helper()
	stop := gosdkserver.Graceful
	if how == sigkill {
		stop = gosdkserver.Abrupt
	}
	if err := g.Srv.Restart(stop); err != nil {
		t.Fatal(err)
	}
}

func (g *goSDK) Freeze(*testing.T) { g.Srv.Freeze() }
func (g *goSDK) Thaw(*testing.T)   { g.Srv.Thaw() }

func (g *goSDK) Echo(text string) (mcp.CallToolRequest, string) {
	return ToolRequest("echo", map[string]any{"text": text}), text
}

func (g *goSDK) Unsafe(marker string) mcp.CallToolRequest {
	return ToolRequest("increment", map[string]any{"id": marker})
}

func (g *goSDK) Ran(*testing.T) map[string]int { return g.Srv.RunsByID() }

func (g *goSDK) Long(token string) mcp.CallToolRequest {
	req := ToolRequest("long", map[string]any{"millis": 1500})
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	return req
}

func (g *goSDK) LongRuns() int64 { return g.Srv.Runs("long") }
func (g *goSDK) URI() string     { return gosdkserver.CounterURI }

func (g *goSDK) Update(*testing.T, *client.ResilientClient) { g.Srv.UpdateResource() }

// goSDKStateless is the same server with StreamableHTTPOptions.Stateless.
type goSDKStateless struct{ *goSDK }

func (goSDKStateless) stateless() bool { return true }

// ServerEverything is the TypeScript reference server, a node child process,
// behind a fault proxy that only taps: it forwards every byte and records
// them, since the server cannot be made to count its executions.
type ServerEverything struct {
	Srv   *everything.Server
	Proxy *faultproxy.Proxy
}

// StartEverything starts server-everything with node behind a fault proxy,
// stopped when the test ends; the test skips if node or the pinned package
// is missing.
func StartEverything(t *testing.T) *ServerEverything {
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
	return &ServerEverything{srv, proxy}
}

func (e *ServerEverything) URL() string     { return e.Proxy.URL("/mcp") }
func (e *ServerEverything) stateless() bool { return false }

func (e *ServerEverything) Restart(t *testing.T, how Kill) {
	t.Helper()
	sig := syscall.SIGTERM
	if how == sigkill {
		sig = syscall.SIGKILL
	}
	if err := e.Srv.Restart(sig); err != nil {
		t.Fatal(err)
	}
}

func (e *ServerEverything) Freeze(t *testing.T) {
	if err := e.Srv.Stop(); err != nil {
		t.Fatal(err)
	}
}

func (e *ServerEverything) Thaw(t *testing.T) {
	if err := e.Srv.Cont(); err != nil {
		t.Fatal(err)
	}
}

func (e *ServerEverything) Echo(text string) (mcp.CallToolRequest, string) {
	return ToolRequest("echo", map[string]any{"message": text}), "Echo: " + text
}

// unsafe is toggle-simulated-logging, annotated neither read-only nor
// idempotent: it switches the session's simulated log messages on or off.
// Its schema has no arguments and the SDK strips unknown ones, so the
// marker changes nothing on the server and travels in the request body for
// ran to find.
func (e *ServerEverything) Unsafe(marker string) mcp.CallToolRequest {
	return ToolRequest("toggle-simulated-logging", map[string]any{"marker": marker})
}

// ran counts the requests carrying marker that the server did not refuse
// unread (a 4xx: the TS SDK's 400 to an unknown session, for one), reading
// the tapped connections as the HTTP/1.1 exchanges they are: requests and
// responses in order, bodies with Content-Length or chunked. A request whose
// answer never came counts: it may have run.
func (e *ServerEverything) Ran(t *testing.T) map[string]int {
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
func (e *ServerEverything) exchanges(f func(body []byte, status int)) {
	for _, tap := range e.Proxy.Tapped() {
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

func (e *ServerEverything) Long(token string) mcp.CallToolRequest {
	req := ToolRequest("trigger-long-running-operation", map[string]any{"duration": 1.5, "steps": 5})
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	return req
}

func (e *ServerEverything) LongRuns() int64 { return -1 }

// uri is one of the server's static resources; its subscriptions accept
// any URI.
func (e *ServerEverything) URI() string { return "demo://resource/static/document/architecture.md" }

// update needs a call: server-everything sends resources/updated only to
// sessions that called toggle-subscriber-updates (at once, then every 5s),
// and forgets that with the process. Callers make it after checking what
// the client did on its own.
func (e *ServerEverything) Update(t *testing.T, c *client.ResilientClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CallTool(ctx, ToolRequest("toggle-subscriber-updates", map[string]any{})); err != nil {
		t.Errorf("toggle-subscriber-updates: %v", err)
	}
}

// answered counts the JSON-RPC requests of method the server answered
// with 2xx.
func (e *ServerEverything) Answered(method string) int {
	needle := []byte(`"method":"` + method + `"`)
	n := 0
	e.exchanges(func(body []byte, status int) {
		if bytes.Contains(body, needle) && status/100 == 2 {
			n++
		}
	})
	return n
}

// Target is one server under test, by name.
type Target struct {
	Name  string
	Start func(t *testing.T) RealServer
}

var (
	GoSDKTarget = Target{"go-sdk", func(t *testing.T) RealServer {
		return StartGoSDK(t, gosdkserver.Config{})
	}}
	// With an event store, SSE responses carry event ids and can be
	// resumed; the store dies with the process.
	GoSDKEventsTarget = Target{"go-sdk-eventstore", func(t *testing.T) RealServer {
		return StartGoSDK(t, gosdkserver.Config{EventStore: true})
	}}
	GoSDKStatelessTarget = Target{"go-sdk-stateless", func(t *testing.T) RealServer {
		return goSDKStateless{StartGoSDK(t, gosdkserver.Config{Stateless: true})}
	}}
	EverythingTarget = Target{"server-everything", func(t *testing.T) RealServer {
		return StartEverything(t)
	}}
)

// RealClient is a client of srv, closed with the test.
func RealClient(t *testing.T, srv RealServer, opts ...client.Option) *client.ResilientClient {
	t.Helper()
	c, err := client.New(srv.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Tally sorts the outcomes of calls the way the error contract does, and
// keeps one message of each kind for the report.
type Tally struct {
	Mu                            sync.Mutex
	OK, Unknown, Unavail, Untyped int
	msgs                          map[string]int
}

// add records err and returns its kind.
func (ty *Tally) Add(err error) string {
	kind := ErrKind(err)
	ty.Mu.Lock()
	defer ty.Mu.Unlock()
	switch kind {
	case "ok":
		ty.OK++
		return kind
	case "outcome unknown":
		ty.Unknown++
	case "unavailable":
		ty.Unavail++
	default:
		ty.Untyped++
	}
	if ty.msgs == nil {
		ty.msgs = map[string]int{}
	}
	ty.msgs[kind+": "+err.Error()]++
	return kind
}

// ErrKind is the class of a call's error the tallies count: ok, outcome
// unknown, unavailable, or untyped.
func ErrKind(err error) string {
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

func (ty *Tally) Total() int {
	ty.Mu.Lock()
	defer ty.Mu.Unlock()
	return ty.OK + ty.Unknown + ty.Unavail + ty.Untyped
}

func (ty *Tally) String() string {
	ty.Mu.Lock()
	defer ty.Mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d ok, %d outcome unknown, %d unavailable, %d untyped", ty.OK, ty.Unknown, ty.Unavail, ty.Untyped)
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

// Call makes req within d.
func Call(c *client.ResilientClient, req mcp.CallToolRequest, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return CallToolRequest(ctx, c, req)
}

// Within is eventually for a condition a test reports on, not fails by.
func Within(limit time.Duration, cond func() bool) bool {
	for range int(limit / (20 * time.Millisecond)) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}
