package restarts

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// This file checks that the client's loops around notification streams,
// and what the observers are told of a failure, follow the one policy
// (client/internal/policy): a stream refused for good is not asked for
// again on its session, however short the backoff; the observers' error
// type is the class the client decided on.

// refuse is a testserver guard that answers the requests refused picks
// with answer, counting them, and passes the others on.
func refuse(count *atomic.Int64, refused func(r *http.Request, method string) bool, answer func(w http.ResponseWriter, id json.RawMessage)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				_ = json.Unmarshal(body, &msg)
			}
			if !refused(r, msg.Method) {
				next.ServeHTTP(w, r)
				return
			}
			count.Add(1)
			answer(w, msg.ID)
		})
	}
}

func status(code int) func(http.ResponseWriter, json.RawMessage) {
	return func(w http.ResponseWriter, _ json.RawMessage) { w.WriteHeader(code) }
}

// A stateless-era server that answers subscriptions/listen with an error
// no retry can fix (it has no such method) is asked once per session, not
// in a loop: the client logs why and goes on serving calls.
func TestStatelessListenRefusedForGoodIsNotAskedAgain(t *testing.T) {
	var listens atomic.Int64
	methodNotFound := func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32601,"message":"Method not found"}}`))
	}
	guard := refuse(&listens, func(_ *http.Request, method string) bool { return method == string(mcp.MethodSubscriptionsListen) }, methodNotFound)
	var logs rig.LogRecorder
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra, Guard: guard}, false,
		client.WithBackOff(rig.FastBackOff), client.WithLogger(logs.Logger()))
	r.Start()
	stop, err := r.C.ListenAsync(r.Ctx(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	if err != nil {
		t.Fatalf("ListenAsync: %v", err)
	}
	defer stop()
	rig.Eventually(t, "the listen stream asked for", func() bool { return listens.Load() >= 1 })
	time.Sleep(300 * time.Millisecond) // 30 backoff steps: a loop would ask again many times
	if n := listens.Load(); n != 1 {
		t.Errorf("subscriptions/listen sent %d times to a server without it, want 1", n)
	}
	if !logs.Has(slog.LevelWarn, "subscriptions/listen refused", "member", "0") {
		t.Errorf("the refusal was not logged as a warning:\n%s", &logs)
	}
	r.MustEcho("still served")
}

// A session-era server that refuses the GET event stream for good (403,
// or 404 on a session it knows, which the one probe shows) is asked once
// per session, by mcp-go's listener (a handler before the first session)
// as by the client's own (a handler after it), and the session is kept.
func TestEventStreamRefusedForGoodIsNotAskedAgain(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		late   bool
		wait   time.Duration
	}{
		// mcp-go's listener asks again every second by itself.
		{"403 to mcp-go's listener", http.StatusForbidden, false, 1500 * time.Millisecond},
		{"403 to the client's own", http.StatusForbidden, true, 300 * time.Millisecond},
		{"404 on a known session to the client's own", http.StatusNotFound, true, 300 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var gets atomic.Int64
			guard := refuse(&gets, func(r *http.Request, _ string) bool { return r.Method == http.MethodGet }, status(tt.status))
			r := rig.New(t, testserver.Config{Era: testserver.SessionEra, Guard: guard}, false,
				client.WithBackOff(rig.FastBackOff), client.WithKeepAlive(0))
			if !tt.late {
				r.C.OnNotification(func(mcp.JSONRPCNotification) {})
			}
			r.Start()
			r.MustEcho("first")
			if tt.late {
				r.C.OnNotification(func(mcp.JSONRPCNotification) {})
			}
			rig.Eventually(t, "the event stream asked for", func() bool { return gets.Load() >= 1 })
			time.Sleep(tt.wait)
			if n := gets.Load(); n != 1 {
				t.Errorf("%d GETs refused with %d on one session, want 1", n, tt.status)
			}
			r.MustEcho("second")
			if s := r.C.Stats(); s.Reinitializations+s.Redials != 0 {
				t.Errorf("stats %+v: the session was replaced, want it kept", s)
			}
		})
	}
}

// The observers are told the class the client decided on: a 404 in the
// stateless era is the server's answer (no session to lose), returned as
// is after one attempt, so the attempt and the call are "server_error",
// not "session_expired" as a second reading of the error once said.
func TestObserverErrorTypeIsTheClientsClass(t *testing.T) {
	var refused atomic.Int64
	guard := refuse(&refused, func(_ *http.Request, method string) bool { return method == string(mcp.MethodToolsCall) }, status(http.StatusNotFound))
	rec := &rig.Recorder{T: t, Name: "rec"}
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra, Guard: guard}, false, client.WithObserver(rec))
	r.Start()
	if _, err := rig.CallTool(r.Ctx(), r.C, "echo", map[string]any{"text": "x"}); err == nil {
		t.Fatal("a call answered 404 succeeded")
	}
	lines, _ := rec.Told()
	want := []string{
		"call tools/call echo",
		"attempt 1 first waited=none",
		`attempt ended "server_error"`,
		`call ended "server_error" after 1`,
	}
	if i := slices.Index(lines, "call tools/call echo"); i < 0 || !slices.Equal(lines[i:], want) {
		t.Errorf("told:\n%q\nwant it to end with\n%q", lines, want)
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("tools/call sent %d times, want 1", n)
	}
}
