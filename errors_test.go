package resilientmcp_test

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
)

// The sentinels a caller branches on. Every error is exactly one of them or
// the server's own error; ErrClosed may come with ErrOutcomeUnknown.
var sentinels = []error{client.ErrOutcomeUnknown, client.ErrUnavailable, client.ErrAuthorizationRequired, client.ErrClosed}

// checkContract fails unless err is want (nil: the server's own error) and
// none of the other sentinels, and its message says each thing once.
func checkContract(t *testing.T, err error, want error, method string) {
	t.Helper()
	if err == nil {
		t.Fatal("the call succeeded; the row was not provoked")
	}
	for _, s := range sentinels {
		if is := errors.Is(err, s); is != (s == want) {
			t.Errorf("errors.Is(err, %v) = %v\nerr: %v", s, is, err)
		}
	}
	msg := err.Error()
	if n := strings.Count(msg, "failed to send request"); n > 1 {
		t.Errorf("the message says \"failed to send request\" %d times: %s", n, msg)
	}
	if want != nil && !strings.Contains(msg, method) {
		t.Errorf("the message does not name %s: %s", method, msg)
	}
	t.Logf("caller saw: %v", err)
}

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
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.start()
		r.srv.FailPOSTs(1, 0, "", true, "tools/call") // runs, and the answer is lost
		checkContract(t, r.increment(), client.ErrOutcomeUnknown, "tools/call")
		if runs := r.srv.ToolRuns("increment"); runs != 1 {
			t.Errorf("increment ran %d times, want 1", runs)
		}
	})

	t.Run("may have run: attempts used up after sending", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra}, false, client.WithMaxAttempts(3))
		r.start()
		r.srv.FailPOSTs(100, 0, "", true, "tools/call")
		_, err := callTool(r.ctx(), r.c, "echo", map[string]any{"text": "x"})
		checkContract(t, err, client.ErrOutcomeUnknown, "tools/call")
		// Three attempts count; a pooled connection found dead under the
		// request is sent again once more without counting, as it says
		// nothing of the server.
		runs := r.srv.ToolRuns("echo")
		if runs < 3 || runs > 4 {
			t.Errorf("echo ran %d times, want 3 attempts (and at most one more on a stale connection)", runs)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("(%d attempts)", runs)) {
			t.Errorf("the message does not count the %d attempts: %v", runs, err)
		}
	})

	t.Run("may have run: the deadline passed after sending (F25)", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.SessionEra}, false)
		r.start()
		_, err := callTool(deadline(300*time.Millisecond), r.c, "slow", map[string]any{"ms": 5000})
		checkContract(t, err, client.ErrOutcomeUnknown, "tools/call")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v; want it to wrap context.DeadlineExceeded", err)
		}
		if runs := r.srv.ToolRuns("slow"); runs != 1 {
			t.Errorf("slow ran %d times, want 1", runs)
		}
	})

	t.Run("may have run: the answer was not usable (500)", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.start()
		r.srv.FailPOSTs(1, http.StatusInternalServerError, "", true, "tools/call")
		_, err := callTool(r.ctx(), r.c, "echo", map[string]any{"text": "x"})
		checkContract(t, err, client.ErrOutcomeUnknown, "tools/call")
		if runs, sent := r.srv.ToolRuns("echo"), r.srv.RPCs("tools/call"); runs != 1 || sent != 1 {
			t.Errorf("echo ran %d times in %d requests, want once: a broken answer is not replayed", runs, sent)
		}
	})

	t.Run("did not run: server down until the deadline", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.SessionEra}, false)
		r.start()
		r.srv.Stop()
		err := func() error { _, err := callTool(deadline(300*time.Millisecond), r.c, "increment", nil); return err }()
		checkContract(t, err, client.ErrUnavailable, "tools/call")
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("err = %v; want it to wrap the deadline and the refusal", err)
		}
		if runs := r.srv.ToolRuns("increment"); runs != 0 {
			t.Errorf("increment ran %d times", runs)
		}
		if s := r.c.Stats(); s.Unavailable != 1 {
			t.Errorf("stats %+v: want one call counted Unavailable", s)
		}
	})

	t.Run("did not run: declined with 503 until the deadline", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.start()
		r.srv.FailPOSTs(1000, http.StatusServiceUnavailable, "", false, "tools/call")
		err := func() error { _, err := callTool(deadline(time.Second), r.c, "increment", nil); return err }()
		checkContract(t, err, client.ErrUnavailable, "tools/call")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v; want it to wrap the deadline", err)
		}
		// The default backoff (100ms x1.6) fits 4 or 5 pauses in a second.
		sent := r.srv.RPCs("tools/call")
		if runs := r.srv.ToolRuns("increment"); runs != 0 || sent < 2 || sent > 7 {
			t.Errorf("increment ran %d times in %d requests; want 0 runs, tries spaced by the backoff", runs, sent)
		}
	})

	t.Run("did not run: a Retry-After beyond the deadline ends the call", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.start()
		r.srv.FailPOSTs(1000, http.StatusTooManyRequests, "30", false, "tools/call")
		err := func() error { _, err := callTool(deadline(5*time.Second), r.c, "increment", nil); return err }()
		checkContract(t, err, client.ErrUnavailable, "tools/call")
		if sent := r.srv.RPCs("tools/call"); sent != 1 {
			t.Errorf("%d requests; the 30s Retry-After leaves no time for a second within 5s", sent)
		}
	})

	t.Run("needs authorization", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra, RequireToken: "s3cret"}, false)
		_, err := callTool(r.ctx(), r.c, "increment", nil)
		checkContract(t, err, client.ErrAuthorizationRequired, "")
		var authErr *client.AuthorizationRequiredError
		if !errors.As(err, &authErr) || authErr.Reason != "no_token" {
			t.Errorf("err = %v; want an *AuthorizationRequiredError with Reason no_token", err)
		}
		if posts := r.srv.HTTPRequests("POST"); posts > 2 {
			t.Errorf("%d POSTs for a call refused with 401", posts)
		}
	})

	t.Run("the server's own error", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.start()
		_, err := callTool(r.ctx(), r.c, "no-such-tool", nil)
		checkContract(t, err, nil, "tools/call")
		if sent := r.srv.RPCs("tools/call"); sent != 1 {
			t.Errorf("%d requests for an answer the server gave: it was sent again", sent)
		}
	})

	t.Run("closed", func(t *testing.T) {
		r := newRig(t, testserver.Config{Era: testserver.StatelessEra}, false)
		r.start()
		r.c.Close()
		err := r.increment()
		checkContract(t, err, client.ErrClosed, "")
		if err != client.ErrClosed {
			t.Errorf("a call after Close = %v; want ErrClosed itself", err)
		}
		if runs := r.srv.ToolRuns("increment"); runs != 0 {
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
	gaps := map[string]func(r *rig) (start, end func()){
		"reset on accept": func(r *rig) (func(), func()) {
			return r.srv.Stop, func() {
				if err := r.srv.Start(); err != nil {
					t.Error(err)
				}
			}
		},
		"read and dropped": func(r *rig) (func(), func()) {
			return func() { r.srv.FailPOSTs(100000, 0, "", false) },
				func() { r.srv.FailPOSTs(0, 0, "", false) }
		},
	}
	for name, gap := range gaps {
		for _, era := range bothEras {
			t.Run(name+"/"+era.String(), func(t *testing.T) {
				r := newRig(t, testserver.Config{Era: era}, true)
				r.start()
				r.mustEcho("before")
				begin, end := gap(r)
				begin()
				accepted, posts := r.proxy.Accepted(), r.srv.HTTPRequests("POST")
				done := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					_, err := callTool(ctx, r.c, "echo", map[string]any{"text": "through the gap"})
					done <- err
				}()
				time.Sleep(2 * time.Second)
				select {
				case err := <-done:
					t.Fatalf("the call ended during the gap: %v", err)
				default:
				}
				conns, sent := r.proxy.Accepted()-accepted, r.srv.HTTPRequests("POST")-posts
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
