package restarts

import (
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F40: a gateway or proxy drains. Every answer, whatever its status, reaches
// the caller typed: a status the client does not know is classified by its
// class (5xx or 499: may have run, so a safe call is replayed and another
// ends ErrOutcomeUnknown; 4xx: refused, ErrUnavailable), its error keeps
// the status and the body's first bytes; after a JSON-RPC -32603 a safe
// call is sent again, another ends ErrOutcomeUnknown with the server's
// error in its chain (WithRetryableRPCCodes).
func TestF40GatewayAnswersAreTyped(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false, client.WithKeepAlive(0))
			r.Start()
			runs := func(tool string) func() int64 {
				before := r.Srv.ToolRuns(tool)
				return func() int64 { return r.Srv.ToolRuns(tool) - before }
			}

			t.Run("499 with an empty body to a read-only call: replayed", func(t *testing.T) {
				ran := runs("echo")
				r.Srv.FailPOSTsAnswer(1, 499, "", 0, true, "tools/call")
				if got, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "through 499"}); err != nil || got != "through 499" {
					t.Errorf("echo answered 499 = %q, %v; want it replayed", got, err)
				}
				if n := ran(); n != 2 {
					t.Errorf("echo ran %d times, want 2: once answered 499, once replayed", n)
				}
			})
			t.Run("499 with an empty body to an unannotated call: outcome unknown", func(t *testing.T) {
				ran := runs("increment")
				r.Srv.FailPOSTsAnswer(1, 499, "", 0, true, "tools/call")
				err := r.Increment()
				if !errors.Is(err, client.ErrOutcomeUnknown) {
					t.Fatalf("increment answered 499: %v; want ErrOutcomeUnknown", err)
				}
				if !strings.Contains(err.Error(), "HTTP 499 with an empty body") {
					t.Errorf("the error does not keep the status: %v", err)
				}
				if n := ran(); n != 1 {
					t.Errorf("increment ran %d times, want 1", n)
				}
			})
			t.Run("520 from a proxy to an unannotated call: outcome unknown, the body's first bytes kept", func(t *testing.T) {
				ran := runs("increment")
				r.Srv.FailPOSTsAnswer(1, 520, "<html>origin error "+strings.Repeat("x", 500)+"</html>", 0, true, "tools/call")
				err := r.Increment()
				if !errors.Is(err, client.ErrOutcomeUnknown) {
					t.Fatalf("increment answered 520: %v; want ErrOutcomeUnknown", err)
				}
				if msg := err.Error(); !strings.Contains(msg, `HTTP 520: "<html>origin error xxx`) || strings.Contains(msg, "</html>") {
					t.Errorf("the error does not keep the status and the body's first bytes only: %v", err)
				}
				if n := ran(); n != 1 {
					t.Errorf("increment ran %d times, want 1", n)
				}
			})
			t.Run("-32603 to a read-only call: replayed", func(t *testing.T) {
				ran := runs("echo")
				r.Srv.FailPOSTsAnswer(1, 0, "", mcp.INTERNAL_ERROR, true, "tools/call")
				if got, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "through -32603"}); err != nil || got != "through -32603" {
					t.Errorf("echo answered -32603 = %q, %v; want it replayed", got, err)
				}
				if n := ran(); n != 2 {
					t.Errorf("echo ran %d times, want 2", n)
				}
			})
			t.Run("-32603 to an unannotated call: outcome unknown, the server's error in the chain", func(t *testing.T) {
				ran := runs("increment")
				r.Srv.FailPOSTsAnswer(1, 0, "", mcp.INTERNAL_ERROR, true, "tools/call")
				err := r.Increment()
				if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, mcp.ErrInternalError) {
					t.Fatalf("increment answered -32603: %v; want ErrOutcomeUnknown with the server's error", err)
				}
				if n := ran(); n != 1 {
					t.Errorf("increment ran %d times, want 1", n)
				}
			})
			t.Run("413 with an empty body: refused, not sent again", func(t *testing.T) {
				ran, calls := runs("echo"), r.Srv.RPCs("tools/call")
				r.Srv.FailPOSTsAnswer(1, 413, "", 0, false, "tools/call")
				_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "big"})
				if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "413") {
					t.Fatalf("echo answered 413: %v; want ErrUnavailable naming the status", err)
				}
				if n, sent := ran(), r.Srv.RPCs("tools/call")-calls; n != 0 || sent != 1 {
					t.Errorf("echo ran %d times in %d sends, want 0 in 1", n, sent)
				}
			})
		})
	}
}

// WithRetryableRPCCodes replaces the list: with none, -32603 is the
// server's answer even to a read-only call.
func TestWithRetryableRPCCodesReplacesTheList(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false, client.WithKeepAlive(0), client.WithRetryableRPCCodes())
	r.Start()
	r.Srv.FailPOSTsAnswer(1, 0, "", mcp.INTERNAL_ERROR, true, "tools/call")
	_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "x"})
	if !errors.Is(err, mcp.ErrInternalError) {
		t.Fatalf("echo answered -32603 with no retryable codes: %v; want the server's error", err)
	}
	if n := r.Srv.ToolRuns("echo"); n != 1 {
		t.Errorf("echo ran %d times, want 1", n)
	}
}
