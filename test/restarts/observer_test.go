package restarts

import (
	"slices"
	"testing"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Several observers are each told everything, in order, and each call's
// context passes through all of them: a restart's call is two attempts,
// the second after the re-initialization it waited for; outside the call,
// the lost session, the new one, the old one's end, and the slot's states.
func TestObserversAreEachToldEverything(t *testing.T) {
	first := &rig.Recorder{T: t, Name: "first"}
	second := &rig.Recorder{T: t, Name: "second", Before: "first"}
	r := rig.New(t, testserver.Config{Era: testserver.SessionEra}, false, client.WithObserver(first), client.WithObserver(second))
	r.MustEcho("before")
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r.MustEcho("after")

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
	for _, rec := range []*rig.Recorder{first, second} {
		lines, _ := rec.Told()
		if !slices.Equal(lines, want) {
			t.Errorf("%s was told:\n%q\nwant\n%q", rec.Name, lines, want)
		}
	}

	has := func(rec *rig.Recorder, match func(observe.Event) bool) bool {
		_, events := rec.Told()
		return slices.ContainsFunc(events, match)
	}
	for _, rec := range []*rig.Recorder{first, second} {
		for what, match := range map[string]func(observe.Event) bool{
			"the first session opened": func(ev observe.Event) bool {
				o, ok := ev.(observe.SessionOpened)
				return ok && o.Reason == observe.OpenFirst && o.Session != ""
			},
			"the session lost, expired": func(ev observe.Event) bool {
				l, ok := ev.(observe.SessionLost)
				return ok && l.Reason == observe.LossExpired && l.Cause != nil
			},
			"the new session opened by a re-initialization": func(ev observe.Event) bool {
				o, ok := ev.(observe.SessionOpened)
				return ok && o.Reason == observe.OpenReinitialize && o.Session == r.C.GetSessionId()
			},
			"the old session closed after its loss": func(ev observe.Event) bool {
				c, ok := ev.(observe.SessionClosed)
				return ok && c.Lost == observe.LossExpired && c.Cause != nil && c.Duration > 0
			},
			"the slot Ready": func(ev observe.Event) bool {
				return ev == observe.SessionState{From: client.Connecting, To: client.Ready}
			},
			"the slot Reconnecting": func(ev observe.Event) bool {
				return ev == observe.SessionState{From: client.Ready, To: client.Reconnecting}
			},
			"the slot Ready again": func(ev observe.Event) bool {
				return ev == observe.SessionState{From: client.Reconnecting, To: client.Ready}
			},
		} {
			rig.Eventually(t, rec.Name+" told of "+what, func() bool { return has(rec, match) })
		}
	}
	r.C.Close()
	for _, rec := range []*rig.Recorder{first, second} {
		if !has(rec, func(ev observe.Event) bool { return ev == observe.SessionState{From: client.Ready, To: client.Closed} }) {
			t.Errorf("%s not told the slot closed by the time Close returned", rec.Name)
		}
	}
}
