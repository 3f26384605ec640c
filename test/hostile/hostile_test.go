package hostile

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/hostile"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Hostile and broken servers (F18, F19): one test per row, each asserting
// what the caller saw, what the server ran, and, where it is the point,
// memory and time. Each goes red without the protection it names.

// hostileRig is a client of a hostile server that has listed its tools.
func hostileRig(t *testing.T, answer hostile.Answer, opts ...client.Option) (*hostile.Server, *client.ResilientClient) {
	t.Helper()
	srv := hostile.New(answer)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	return srv, c
}

func withDeadline(t *testing.T, d time.Duration) (context.Context, time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	deadline, _ := ctx.Deadline()
	return ctx, deadline
}

func answerText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) != 1 {
		return ""
	}
	text, _ := res.Content[0].(mcp.TextContent)
	return text.Text
}

// F18: an answer that carries another request's id is never returned. The
// session that gave it is replaced; a safe call is sent again on the new
// one, an unsafe one is ErrOutcomeUnknown and ran once.
func TestF18AnotherRequestsAnswerIsNeverReturned(t *testing.T) {
	for _, f := range rig.Framings {
		t.Run(f.Name+"/unsafe", func(t *testing.T) {
			srv, c := hostileRig(t, hostile.Then(1, hostile.WrongID(f.SSE), hostile.Right(f.SSE)))
			ctx, _ := withDeadline(t, 20*time.Second)
			start := time.Now()
			res, err := c.CallTool(ctx, rig.ToolRequest("increment", nil))
			t.Logf("returned in %v", time.Since(start))
			rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
			if res != nil {
				t.Errorf("returned a result: %q", answerText(res))
			}
			if runs := srv.Runs("increment"); runs != 1 {
				t.Errorf("increment ran %d times, want 1", runs)
			}
			if n := c.Stats().WrongAnswers; n != 1 {
				t.Errorf("Stats().WrongAnswers = %d, want 1", n)
			}
			// The session that mixed up answers is not used again.
			res, err = c.CallTool(ctx, rig.ToolRequest("echo", nil))
			if err != nil || answerText(res) != "echo ran 1 times" {
				t.Fatalf("the next call: %q, %v", answerText(res), err)
			}
			if n := srv.Sessions(); n != 2 {
				t.Errorf("%d sessions initialized, want 2: the corrupt one replaced", n)
			}
		})
		t.Run(f.Name+"/safe", func(t *testing.T) {
			srv, c := hostileRig(t, hostile.Then(1, hostile.WrongID(f.SSE), hostile.Right(f.SSE)))
			ctx, _ := withDeadline(t, 20*time.Second)
			res, err := c.CallTool(ctx, rig.ToolRequest("echo", nil))
			if err != nil {
				t.Fatalf("a safe call: %v", err)
			}
			// The answer to its own second run, on the new session.
			if got := answerText(res); got != "echo ran 2 times" {
				t.Errorf("answer %q, want the replay's own", got)
			}
			if n := srv.Sessions(); n != 2 {
				t.Errorf("%d sessions initialized, want 2", n)
			}
			if n := c.Stats().WrongAnswers; n != 1 {
				t.Errorf("Stats().WrongAnswers = %d, want 1", n)
			}
		})
	}
}

// F19: a 200 MB answer is refused at the limit: at once, not at the
// deadline; never replayed, even for a safe tool (the same answer would
// come back); in memory bounded by the limit and mcp-go's copies of it.
func TestF19HugeAnswerIsRefusedAtTheLimit(t *testing.T) {
	const limit = 16 << 20 // the default
	for _, f := range rig.Framings {
		t.Run(f.Name, func(t *testing.T) {
			srv, c := hostileRig(t, hostile.Huge(200<<20, f.SSE))
			ctx, _ := withDeadline(t, 5*time.Second)
			peak := rig.HeapPeak(t)
			start := time.Now()
			_, err := c.CallTool(ctx, rig.ToolRequest("echo", nil))
			elapsed := time.Since(start)
			grew := peak()
			t.Logf("returned in %v; heap grew by at most %.1f MiB (limit %d MiB)", elapsed, float64(grew)/(1<<20), limit>>20)
			rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
			if !errors.Is(err, client.ErrResponseTooLarge) || !strings.Contains(err.Error(), "16777216") {
				t.Errorf("not ErrResponseTooLarge naming the limit: %v", err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("refused only at the deadline: %v", err)
			}
			if runs := srv.Runs("echo"); runs != 1 {
				t.Errorf("echo ran %d times, want 1: a refused answer is never replayed", runs)
			}
			// What mcp-go holds of the answer when it is refused: an SSE
			// line as bufio's fragments and the line built from them (2x
			// the limit); a JSON body in json.Decoder's buffer, which
			// doubles as it fills: its last growth holds the old buffer
			// and the new (3x), and the buffer before them may not have
			// been collected yet (3.5x). And some slack for the process.
			bound := uint64(2*limit + limit/2)
			if !f.SSE {
				bound = 4 * limit
			}
			if grew > bound {
				t.Errorf("heap grew by %d MiB refusing the answer; limit %d MiB", grew>>20, limit>>20)
			}
		})
	}
}

// F19: an SSE stream that only ever sends keepalive comments holds the
// call until its deadline, not longer, with one request.
func TestF19KeepaliveOnlyStreamEndsAtTheDeadline(t *testing.T) {
	srv, c := hostileRig(t, hostile.KeepaliveOnly(20*time.Millisecond))
	ctx, deadline := withDeadline(t, time.Second)
	_, err := c.CallTool(ctx, rig.ToolRequest("increment", nil))
	if late := time.Since(deadline); late > time.Second {
		t.Errorf("returned %v after the deadline", late)
	}
	rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("not DeadlineExceeded: %v", err)
	}
	if n := srv.Requests("tools/call"); n != 1 {
		t.Errorf("the server got %d tools/call, want 1", n)
	}
}

// F19: a call returns by its deadline even while its answer is still
// arriving, a byte at a time.
func TestF19TricklingAnswerEndsAtTheDeadline(t *testing.T) {
	for _, f := range rig.Framings {
		t.Run(f.Name, func(t *testing.T) {
			srv, c := hostileRig(t, hostile.Trickle(50*time.Millisecond, f.SSE))
			ctx, deadline := withDeadline(t, time.Second)
			_, err := c.CallTool(ctx, rig.ToolRequest("increment", nil))
			if late := time.Since(deadline); late > time.Second {
				t.Errorf("returned %v after the deadline", late)
			}
			rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("not DeadlineExceeded: %v", err)
			}
			if runs := srv.Runs("increment"); runs != 1 {
				t.Errorf("increment ran %d times", runs)
			}
		})
	}
}

// Garbage is an error, never a panic, and not a reason to run the call
// again: the same garbage would come back.
func TestInvalidJSONAnswerIsAnError(t *testing.T) {
	srv, c := hostileRig(t, hostile.Invalid())
	ctx, _ := withDeadline(t, 20*time.Second)
	_, err := c.CallTool(ctx, rig.ToolRequest("echo", nil))
	rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("returned only at the deadline: %v", err)
	}
	if runs := srv.Runs("echo"); runs != 1 {
		t.Errorf("echo ran %d times, want 1", runs)
	}
}

// A truncated answer is a lost answer: outcome unknown, replayed only if
// safe.
func TestTruncatedJSONAnswerIsALostAnswer(t *testing.T) {
	t.Run("unsafe", func(t *testing.T) {
		srv, c := hostileRig(t, hostile.Truncated())
		ctx, _ := withDeadline(t, 20*time.Second)
		_, err := c.CallTool(ctx, rig.ToolRequest("increment", nil))
		rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
		if runs := srv.Runs("increment"); runs != 1 {
			t.Errorf("increment ran %d times, want 1", runs)
		}
	})
	t.Run("safe", func(t *testing.T) {
		srv, c := hostileRig(t, hostile.Then(1, hostile.Truncated(), hostile.Right(false)))
		ctx, _ := withDeadline(t, 20*time.Second)
		res, err := c.CallTool(ctx, rig.ToolRequest("echo", nil))
		if err != nil || answerText(res) != "echo ran 2 times" {
			t.Fatalf("%q, %v", answerText(res), err)
		}
		if runs := srv.Runs("echo"); runs != 2 {
			t.Errorf("echo ran %d times, want 2", runs)
		}
	})
}

// Headers set with WithHeaders and WithHeaderFunc (an API key, a token) and
// the session id go to the origin they were meant for and nowhere else: a
// redirect to another port of the same host, where Go's redirect policy
// would keep them all, arrives without them.
func TestRedirectKeepsCredentialsAtTheOrigin(t *testing.T) {
	secrets := map[string]string{"X-Api-Key": "key-secret", "Authorization": "Bearer token-secret"}
	for _, tc := range []struct {
		name        string
		crossOrigin bool
	}{{"another origin", true}, {"same origin", false}} {
		t.Run(tc.name, func(t *testing.T) {
			target := hostile.New(hostile.Right(false))
			t.Cleanup(target.Close)
			to := target.URL
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/mcp" {
					http.Redirect(w, r, to, http.StatusTemporaryRedirect)
					return
				}
				target.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			if !tc.crossOrigin {
				to = front.URL + "/moved"
			}
			c, err := client.New(front.URL+"/mcp",
				client.WithHeaders(map[string]string{"X-Api-Key": secrets["X-Api-Key"]}),
				client.WithHeaderFunc(func(context.Context) map[string]string {
					return map[string]string{"Authorization": secrets["Authorization"]}
				}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx, _ := withDeadline(t, 20*time.Second)
			if res, err := c.CallTool(ctx, rig.ToolRequest("echo", nil)); err != nil || answerText(res) != "echo ran 1 times" {
				t.Fatalf("through the redirect: %q, %v", answerText(res), err)
			}
			headers := target.Headers()
			if len(headers) < 3 {
				t.Fatalf("the redirect target got %d requests", len(headers))
			}
			sessionSent := false
			for _, h := range headers {
				for k, v := range secrets {
					if got := h.Get(k); (got == v) != !tc.crossOrigin {
						t.Errorf("%s: %s = %q arrived", tc.name, k, got)
					}
				}
				sessionSent = sessionSent || h.Get("Mcp-Session-Id") != ""
				if h.Get("Content-Type") != "application/json" && h.Get("Accept") == "" {
					t.Errorf("the request lost its description: %v", h)
				}
			}
			if sessionSent != !tc.crossOrigin {
				t.Errorf("%s: session id sent: %v", tc.name, sessionSent)
			}
		})
	}
}
