package policy

import (
	"testing"
	"time"
)

func TestStaleIfError(t *testing.T) {
	down := StaleFailure{NotAnswered: true}
	for _, tc := range []struct {
		name     string
		f        StaleFailure
		age, max time.Duration
		want     bool
	}{
		{"server silent, within max", down, time.Minute, time.Hour, true},
		{"at max", down, time.Hour, time.Hour, true},
		{"older than max", down, time.Hour + 1, time.Hour, false},
		{"off", down, 0, 0, false},
		{"the server's answer", StaleFailure{Answered: true}, time.Second, time.Hour, false},
		{"silent and answered (too large)", StaleFailure{NotAnswered: true, Answered: true}, time.Second, time.Hour, false},
		{"caller cancelled", StaleFailure{NotAnswered: true, CallerCancelled: true}, time.Second, time.Hour, false},
		{"closed", StaleFailure{NotAnswered: true, Closed: true}, time.Second, time.Hour, false},
		{"no failure said", StaleFailure{}, time.Second, time.Hour, false},
	} {
		if got := StaleIfError(tc.f, tc.age, tc.max); got != tc.want {
			t.Errorf("%s: StaleIfError = %v, want %v", tc.name, got, tc.want)
		}
	}
}
