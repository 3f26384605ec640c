package resilientmcp_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// recorder is an Observer that writes down what it is told, as lines, and
// checks that each call's context passes through every observer.
type recorder struct {
	t    *testing.T
	name string
	// before is the observer given before this one, whose context value
	// this one must see.
	before string

	mu     sync.Mutex
	lines  []string
	events []client.Event
}

type recorderKey struct{ name string }

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) see(ctx context.Context, what string) {
	if ctx.Value(recorderKey{r.name}) == nil {
		r.t.Errorf("%s: %s's context does not carry its own StartCall's", r.name, what)
	}
	if r.before != "" && ctx.Value(recorderKey{r.before}) == nil {
		r.t.Errorf("%s: %s's context does not carry %s's", r.name, what, r.before)
	}
}

func (r *recorder) StartCall(ctx context.Context, call client.CallInfo) context.Context {
	r.add("call %s %s", call.Method, call.Tool)
	return context.WithValue(ctx, recorderKey{r.name}, true)
}

func (r *recorder) StartAttempt(ctx context.Context, a client.AttemptInfo) context.Context {
	r.see(ctx, "StartAttempt")
	r.add("attempt %d %s waited=%s", a.Number, a.Reason, a.Waited)
	return ctx
}

func (r *recorder) EndAttempt(ctx context.Context, end client.AttemptEnd) {
	r.see(ctx, "EndAttempt")
	r.add("attempt ended %q", end.ErrorType)
}

func (r *recorder) EndCall(ctx context.Context, end client.CallEnd) {
	r.see(ctx, "EndCall")
	r.add("call ended %q after %d", end.ErrorType, end.Attempts)
}

func (r *recorder) HandleEvent(_ client.Server, ev client.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) told() ([]string, []client.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines), slices.Clone(r.events)
}

// Several observers are each told everything, in order, and each call's
// context passes through all of them: a restart's call is two attempts,
// the second after the re-initialization it waited for; outside the call,
// the lost session, the new one, the old one's end, and the slot's states.
func TestObserversAreEachToldEverything(t *testing.T) {
	first := &recorder{t: t, name: "first"}
	second := &recorder{t: t, name: "second", before: "first"}
	r := newRig(t, testserver.Config{Era: testserver.SessionEra}, false, client.WithObserver(first), client.WithObserver(second))
	r.mustEcho("before")
	if err := r.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.mustEcho("after")

	want := []string{
		"call tools/call echo",
		"attempt 1 first waited=none",
		`attempt ended ""`,
		`call ended "" after 1`,
		"call tools/call echo",
		"attempt 1 first waited=none",
		`attempt ended "session_expired"`,
		"attempt 2 session_expired waited=reinitialize",
		`attempt ended ""`,
		`call ended "" after 2`,
	}
	for _, rec := range []*recorder{first, second} {
		lines, _ := rec.told()
		if !slices.Equal(lines, want) {
			t.Errorf("%s was told:\n%q\nwant\n%q", rec.name, lines, want)
		}
	}

	has := func(rec *recorder, match func(client.Event) bool) bool {
		_, events := rec.told()
		return slices.ContainsFunc(events, match)
	}
	for _, rec := range []*recorder{first, second} {
		for what, match := range map[string]func(client.Event) bool{
			"the first session opened": func(ev client.Event) bool {
				o, ok := ev.(client.SessionOpened)
				return ok && o.Reason == client.OpenFirst && o.Session != ""
			},
			"the session lost, expired": func(ev client.Event) bool {
				l, ok := ev.(client.SessionLost)
				return ok && l.Reason == client.LossExpired && l.Cause != nil
			},
			"the new session opened by a re-initialization": func(ev client.Event) bool {
				o, ok := ev.(client.SessionOpened)
				return ok && o.Reason == client.OpenReinitialize && o.Session == r.c.GetSessionId()
			},
			"the old session closed after its loss": func(ev client.Event) bool {
				c, ok := ev.(client.SessionClosed)
				return ok && c.Lost == client.LossExpired && c.Cause != nil && c.Duration > 0
			},
			"the slot Ready": func(ev client.Event) bool {
				return ev == client.SessionState{From: client.Connecting, To: client.Ready}
			},
			"the slot Reconnecting": func(ev client.Event) bool {
				return ev == client.SessionState{From: client.Ready, To: client.Reconnecting}
			},
			"the slot Ready again": func(ev client.Event) bool {
				return ev == client.SessionState{From: client.Reconnecting, To: client.Ready}
			},
		} {
			eventually(t, rec.name+" told of "+what, func() bool { return has(rec, match) })
		}
	}
	r.c.Close()
	for _, rec := range []*recorder{first, second} {
		if !has(rec, func(ev client.Event) bool { return ev == client.SessionState{From: client.Ready, To: client.Closed} }) {
			t.Errorf("%s not told the slot closed by the time Close returned", rec.name)
		}
	}
}
