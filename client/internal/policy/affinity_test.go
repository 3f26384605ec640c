package policy

import (
	"testing"
	"time"
)

func TestYoungLoss(t *testing.T) {
	for _, tc := range []struct {
		name       string
		loss       Loss
		sessionEra bool
		answers    int32
		age        time.Duration
		want       bool
	}{
		{"expired in its handshake", LossExpired, true, 0, 0, true},
		{"expired on its first request", LossExpired, true, 0, time.Second, true},
		{"answered one request: a restart", LossExpired, true, 1, time.Second, false},
		{"idle past YoungAge: the server expired it", LossExpired, true, 0, YoungAge, false},
		{"stateless era: no sessions to keep", LossExpired, false, 0, 0, false},
		{"dead connection, not an expired session", LossUnhealthy, true, 0, 0, false},
		{"unreachable", LossUnreachable, true, 0, 0, false},
	} {
		if got := YoungLoss(tc.loss, tc.sessionEra, tc.answers, tc.age); got != tc.want {
			t.Errorf("%s: YoungLoss = %v, want %v", tc.name, got, tc.want)
		}
	}
	if NoAffinity(NoAffinityAfter-1) || !NoAffinity(NoAffinityAfter) {
		t.Errorf("NoAffinity: the verdict comes at %d young losses in a row", NoAffinityAfter)
	}
}
