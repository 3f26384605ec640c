package policy

import (
	"testing"
	"time"
)

func TestSafeToRepeatFollowsTheCallsOptions(t *testing.T) {
	for _, tt := range []struct {
		r        Repeat
		byNature bool
		want     bool
		asked    bool
	}{
		{RepeatByNature, true, true, true},
		{RepeatByNature, false, false, true},
		{RepeatAlways, false, true, false},
		{RepeatNever, true, false, false},
	} {
		asked := false
		got := SafeToRepeat(tt.r, func() bool { asked = true; return tt.byNature })
		if got != tt.want || asked != tt.asked {
			t.Errorf("SafeToRepeat(%d, %v) = %v (annotations asked: %v); want %v (%v)", tt.r, tt.byNature, got, asked, tt.want, tt.asked)
		}
	}
}

// Only transport failures and 5xx count towards the circuit breaker: an
// answer that proves the server is there never does.
func TestOutageCountsOnlyTransportFailuresAnd5xx(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    Verdict
		want bool
	}{
		{"connection refused", Verdict{Class: NotSent, Unreachable: true}, true},
		{"reset after sending", Verdict{Class: OutcomeUnknown, Sent: true}, true},
		{"502", Verdict{Class: OutcomeUnknown, Status: 502}, true},
		{"500", Verdict{Class: Broken, Status: 500}, true},
		{"503", Verdict{Class: NotSent, Busy: true, Status: 503}, true},
		{"429", Verdict{Class: NotSent, Busy: true, Status: 429}, false},
		{"pooled connection closed by the server", Verdict{Class: NotSent, IdleClosed: true}, false},
		{"wrong answer", Verdict{Class: OutcomeUnknown, Corrupt: true, Sent: true}, false},
		{"2xx that is not MCP", Verdict{Class: Broken, Status: 200}, false},
		{"JSON-RPC error", Verdict{Class: ServerError, RPCAnswer: true}, false},
		{"400", Verdict{Class: ServerError, Status: 400}, false},
		{"501: refused", Verdict{Class: Rejected, Status: 501}, false},
		{"499 from a draining gateway", Verdict{Class: OutcomeUnknown, Status: 499}, false},
		{"520", Verdict{Class: OutcomeUnknown, Status: 520}, true},
		{"401", Verdict{Class: AuthRequired, Status: 401}, false},
		{"404: session gone", Verdict{Class: Expired, Status: 404}, false},
		{"caller's deadline", Verdict{Class: Caller, Sent: true}, false},
	} {
		if got := tt.v.Outage(); got != tt.want {
			t.Errorf("%s: Outage() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWhileNoSession(t *testing.T) {
	for _, tt := range []struct {
		failFast, attemptFailed, open bool
		want                          WaitVerdict
	}{
		{false, false, false, KeepWaiting},
		{false, true, false, KeepWaiting},
		{true, false, false, KeepWaiting}, // the first attempt is under way: wait for it
		{true, true, false, FailFastNoSession},
		{false, false, true, FailFastOutage},
		{true, true, true, FailFastOutage},
	} {
		if got := WhileNoSession(tt.failFast, tt.attemptFailed, tt.open); got != tt.want {
			t.Errorf("WhileNoSession(%v, %v, %v) = %d, want %d", tt.failFast, tt.attemptFailed, tt.open, got, tt.want)
		}
	}
}

func TestBreakerOpen(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		since time.Time
		after time.Duration
		want  bool
	}{
		{time.Time{}, time.Second, false},
		{now.Add(-500 * time.Millisecond), time.Second, false},
		{now.Add(-time.Second), time.Second, true},
		{now.Add(-time.Hour), 0, false}, // off
	} {
		if got := BreakerOpen(tt.since, tt.after, now); got != tt.want {
			t.Errorf("BreakerOpen(%v ago, %v) = %v, want %v", now.Sub(tt.since), tt.after, got, tt.want)
		}
	}
}
