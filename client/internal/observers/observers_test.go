package observers

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/observe"
)

type nopObserver struct{}

func (nopObserver) StartCall(ctx context.Context, _ observe.CallInfo) context.Context { return ctx }
func (nopObserver) StartAttempt(ctx context.Context, _ observe.AttemptInfo) context.Context {
	return ctx
}
func (nopObserver) EndAttempt(context.Context, observe.AttemptEnd) {}
func (nopObserver) EndCall(context.Context, observe.CallEnd)       {}
func (nopObserver) HandleEvent(observe.Server, observe.Event)      {}

func TestNewServer(t *testing.T) {
	cfg := (*Config)(nil).With(func(c *Config) { c.List, c.ServerName = append(c.List, nopObserver{}), "s" })
	for raw, want := range map[string]observe.Server{
		"http://127.0.0.1/mcp":       {Name: "s", Address: "127.0.0.1", Port: 80, Transport: "tcp"},
		"https://127.0.0.1/mcp":      {Name: "s", Address: "127.0.0.1", Port: 443, Transport: "tcp"},
		"http://127.0.0.1:8080/mcp":  {Name: "s", Address: "127.0.0.1", Port: 8080, Transport: "tcp"},
		"stdio://server-everything:": {Name: "s", Address: "server-everything", Port: 0, Transport: "pipe"},
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := New(cfg, u, nil).server; got != want {
			t.Errorf("%s: server %+v, want %+v", raw, got, want)
		}
	}
	if New(nil, &url.URL{}, nil) != nil || New(&Config{ServerName: "s"}, &url.URL{}, nil) != nil {
		t.Error("New without observers is not nil")
	}
}

func TestCallErrorType(t *testing.T) {
	other := errors.New("other")
	for _, tc := range []struct {
		err       error
		class     string
		toolError bool
		lastType  string
		lastCode  int
		wantType  string
		wantCode  int
	}{
		{nil, "", false, "", 0, "", 0},
		{nil, "", true, "", 0, "tool_error", 0},
		{other, ClassUnavailable, false, "server_error", -32000, ClassUnavailable, 0},
		{other, "", false, "-32000", -32000, "-32000", -32000},
		{other, "", false, "", 0, "_OTHER", 0},
	} {
		typ, code := callErrorType(tc.err, tc.class, tc.toolError, tc.lastType, tc.lastCode)
		if typ != tc.wantType || code != tc.wantCode {
			t.Errorf("callErrorType(%v, %q, %v, %q, %d) = %q, %d; want %q, %d", tc.err, tc.class, tc.toolError, tc.lastType, tc.lastCode, typ, code, tc.wantType, tc.wantCode)
		}
	}
}

func TestCounters(t *testing.T) {
	var c Counters
	for _, class := range []string{ClassOutcomeUnknown, ClassUnavailable, ClassUnavailable, ClassAuthorizationRequired, ClassInsufficientScope, ClassClosed, ""} {
		c.Record(class)
	}
	if c.OutcomeUnknown.Load() != 1 || c.Unavailable.Load() != 2 || c.AuthorizationRequired.Load() != 1 {
		t.Errorf("counted %d outcome unknown, %d unavailable, %d authorization required; want 1, 2, 1", c.OutcomeUnknown.Load(), c.Unavailable.Load(), c.AuthorizationRequired.Load())
	}
	if c.LastLoss() != observe.LossUnhealthy {
		t.Errorf("LastLoss before any loss: %v", c.LastLoss())
	}
	c.Lost(policy.LossExpired)
	if c.SessionsLost.Load() != 1 || c.LastLoss() != observe.LossExpired {
		t.Errorf("after a loss: %d lost, last %v", c.SessionsLost.Load(), c.LastLoss())
	}
}

// A nil Set and a nil Trace are what a client without observers holds: every
// hook returns at once.
func TestNilHooks(t *testing.T) {
	var o *Set
	ctx := context.Background()
	if o.StartCall(ctx, "tools/call", "t") != ctx || o.Prompt(ctx, "p") != ctx || o.Resource(ctx, "u") != ctx {
		t.Error("a nil Set changed the context")
	}
	if o.CallOf(ctx) != nil || o.Layer() != nil || o.ResendHook() != nil || o.RenewalHook() != nil {
		t.Error("a nil Set gave a hook")
	}
	var ct *Trace
	if ct.Attempt(ctx, nil) != ctx {
		t.Error("a nil Trace changed the context")
	}
	ct.Answered()
	ct.Retry(true, true, policy.LossExpired)
	ct.ReplayRefused()
	o.EndCall(ctx, nil)
	o.DialFailed(nil, 0)
}
