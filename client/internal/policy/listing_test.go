package policy

import "testing"

func TestAfterListingRestart(t *testing.T) {
	for _, tt := range []struct {
		restarts, max int
		want          Ending
	}{
		{0, 3, Continue},
		{3, 3, Continue},
		{4, 3, GiveUp},
		{1, 0, GiveUp},
	} {
		a := AfterListingRestart(tt.restarts, tt.max)
		if a.End != tt.want || (a.End == GiveUp) != (a.Why != "") {
			t.Errorf("AfterListingRestart(%d, %d) = %+v, want %v with a why if it gives up", tt.restarts, tt.max, a, tt.want)
		}
	}
}

// A call Close interrupted may have run if its request was written, even
// if the failure (a cancelled request) alone would not say so.
func TestAfterClose(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before bool
		v      Verdict
		want   bool
	}{
		{"not sent", false, Verdict{Class: Caller}, false},
		{"sent, then cut by Close", false, Verdict{Class: Caller, Sent: true}, true},
		{"sent, its answer broken", false, Verdict{Class: NotSent, Sent: true}, true},
		{"outcome unknown", false, Verdict{Class: OutcomeUnknown}, true},
		{"an earlier attempt may have run", true, Verdict{Class: NotSent}, true},
	} {
		r := Retries{MayHaveRun: tt.before}
		r.AfterClose(tt.v)
		if r.MayHaveRun != tt.want {
			t.Errorf("%s: MayHaveRun %v, want %v", tt.name, r.MayHaveRun, tt.want)
		}
	}
}
