package restarts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// One test per row of the error contract (README "Errors"): each provokes
// the failure against a real server and checks what the caller can rely
// on, and what the server executed.
func TestErrorContract(t *testing.T) {
	deadline := func(d time.Duration) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("may have run: not safe to repeat", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.Start()
		r.Srv.FailPOSTs(1, 0, "", true, "tools/call") // runs, and the answer is lost
		rig.CheckContract(t, r.Increment(), client.ErrOutcomeUnknown, "tools/call")
		if runs := r.Srv.ToolRuns("increment"); runs != 1 {
			t.Errorf("increment ran %d times, want 1", runs)
		}
	})

	t.Run("may have run: attempts used up after sending", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false, client.WithMaxAttempts(3))
		r.Start()
		r.Srv.FailPOSTs(100, 0, "", true, "tools/call")
		_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "x"})
		rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
		// Three attempts count; a pooled connection found dead under the
		// request is sent again once more without counting, as it says
		// nothing of the server.
		runs := r.Srv.ToolRuns("echo")
		if runs < 3 || runs > 4 {
			t.Errorf("echo ran %d times, want 3 attempts (and at most one more on a stale connection)", runs)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("(%d attempts)", runs)) {
			t.Errorf("the message does not count the %d attempts: %v", runs, err)
		}
	})

	t.Run("may have run: the deadline passed after sending (F25)", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
		r.Start()
		_, err := rig.CallTool(deadline(300*time.Millisecond), r.C, "slow", map[string]any{"ms": 5000})
		rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v; want it to wrap context.DeadlineExceeded", err)
		}
		if runs := r.Srv.ToolRuns("slow"); runs != 1 {
			t.Errorf("slow ran %d times, want 1", runs)
		}
	})

	t.Run("may have run: the answer was not usable (500)", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.Start()
		r.Srv.FailPOSTs(1, http.StatusInternalServerError, "", true, "tools/call")
		_, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "x"})
		rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
		if runs, sent := r.Srv.ToolRuns("echo"), r.Srv.RPCs("tools/call"); runs != 1 || sent != 1 {
			t.Errorf("echo ran %d times in %d requests, want once: a broken answer is not replayed", runs, sent)
		}
	})

	t.Run("did not run: server down until the deadline", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false)
		r.Start()
		r.Srv.Stop()
		err := func() error {
			_, err := rig.CallTool(deadline(300*time.Millisecond), r.C, "increment", nil)
			return err
		}()
		rig.CheckContract(t, err, client.ErrUnavailable, "tools/call")
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("err = %v; want it to wrap the deadline and the refusal", err)
		}
		if runs := r.Srv.ToolRuns("increment"); runs != 0 {
			t.Errorf("increment ran %d times", runs)
		}
		if s := r.C.Stats(); s.Unavailable != 1 {
			t.Errorf("stats %+v: want one call counted Unavailable", s)
		}
	})

	t.Run("did not run: declined with 503 until the deadline", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.Start()
		r.Srv.FailPOSTs(1000, http.StatusServiceUnavailable, "", false, "tools/call")
		err := func() error { _, err := rig.CallTool(deadline(time.Second), r.C, "increment", nil); return err }()
		rig.CheckContract(t, err, client.ErrUnavailable, "tools/call")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v; want it to wrap the deadline", err)
		}
		// The default backoff (100ms x1.6) fits 4 or 5 pauses in a second.
		sent := r.Srv.RPCs("tools/call")
		if runs := r.Srv.ToolRuns("increment"); runs != 0 || sent < 2 || sent > 7 {
			t.Errorf("increment ran %d times in %d requests; want 0 runs, tries spaced by the backoff", runs, sent)
		}
	})

	t.Run("did not run: a Retry-After beyond the deadline ends the call", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.Start()
		r.Srv.FailPOSTs(1000, http.StatusTooManyRequests, "30", false, "tools/call")
		err := func() error { _, err := rig.CallTool(deadline(5*time.Second), r.C, "increment", nil); return err }()
		rig.CheckContract(t, err, client.ErrUnavailable, "tools/call")
		if sent := r.Srv.RPCs("tools/call"); sent != 1 {
			t.Errorf("%d requests; the 30s Retry-After leaves no time for a second within 5s", sent)
		}
	})

	t.Run("needs authorization", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra, RequireToken: "s3cret"}, false)
		_, err := rig.CallTool(r.Ctx(), r.C, "increment", nil)
		rig.CheckContract(t, err, client.ErrAuthorizationRequired, "")
		var authErr *client.AuthorizationRequiredError
		if !errors.As(err, &authErr) || authErr.Reason != "no_token" {
			t.Errorf("err = %v; want an *AuthorizationRequiredError with Reason no_token", err)
		}
		if posts := r.Srv.HTTPRequests("POST"); posts > 2 {
			t.Errorf("%d POSTs for a call refused with 401", posts)
		}
	})

	t.Run("the server's own error", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.Start()
		_, err := rig.CallTool(r.Ctx(), r.C, "no-such-tool", nil)
		rig.CheckContract(t, err, nil, "tools/call")
		if sent := r.Srv.RPCs("tools/call"); sent != 1 {
			t.Errorf("%d requests for an answer the server gave: it was sent again", sent)
		}
	})

	t.Run("closed", func(t *testing.T) {
		r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.Start()
		r.C.Close()
		err := r.Increment()
		rig.CheckContract(t, err, client.ErrClosed, "")
		if err != client.ErrClosed {
			t.Errorf("a call after Close = %v; want ErrClosed itself", err)
		}
		if runs := r.Srv.ToolRuns("increment"); runs != 0 {
			t.Errorf("increment ran %d times after Close", runs)
		}
	})
}

// A safe call that meets a server restarting waits on the backoff schedule
// and succeeds within its 5s deadline, whatever the 2s gap looks like: its
// attempts are not spent in milliseconds.
//   - reset on accept: a proxy in front of a process that is down accepts
//     connections and resets them;
//   - read and dropped: the server reads every request (probes and
//     handshakes too) and drops the connection unanswered, so each attempt
//     may have run; the client probes the session before sending again, and
//     the failed probe hands the waiting to the reconnect loop.
func TestSafeCallThroughRestartGap(t *testing.T) {
	gaps := map[string]func(r *rig.Rig) (start, end func()){
		"reset on accept": func(r *rig.Rig) (func(), func()) {
			return r.Srv.Stop, func() {
				if err := r.Srv.Start(); err != nil {
					t.Error(err)
				}
			}
		},
		"read and dropped": func(r *rig.Rig) (func(), func()) {
			return func() { r.Srv.FailPOSTs(100000, 0, "", false) },
				func() { r.Srv.FailPOSTs(0, 0, "", false) }
		},
	}
	for name, gap := range gaps {
		for _, era := range rig.BothEras {
			t.Run(name+"/"+era.String(), func(t *testing.T) {
				r := rig.New(t, testserver.Config{Era: era}, true)
				r.Start()
				r.MustEcho("before")
				begin, end := gap(r)
				begin()
				accepted, posts := r.Proxy.Accepted(), r.Srv.HTTPRequests("POST")
				done := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					_, err := rig.CallTool(ctx, r.C, "echo", map[string]any{"text": "through the gap"})
					done <- err
				}()
				time.Sleep(2 * time.Second)
				select {
				case err := <-done:
					t.Fatalf("the call ended during the gap: %v", err)
				default:
				}
				conns, sent := r.Proxy.Accepted()-accepted, r.Srv.HTTPRequests("POST")-posts
				end()
				if err := <-done; err != nil {
					t.Fatalf("echo through a 2s gap with a 5s deadline: %v", err)
				}
				// The default schedule (100ms x1.6) fits about 7 reconnects
				// in 2s; each may take a probe and a handshake of two
				// requests.
				t.Logf("during the 2s gap: %d connections, %d POSTs read", conns, sent)
				if conns > 30 || sent > 30 {
					t.Errorf("%d connections and %d POSTs in a 2s gap: not paced by the backoff", conns, sent)
				}
			})
		}
	}
}
