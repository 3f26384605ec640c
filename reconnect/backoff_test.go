package reconnect

import (
	"testing"
	"time"
)

func TestDefaultBackOffSchedule(t *testing.T) {
	b := DefaultBackOff()
	want := 100 * time.Millisecond
	for i := range 20 {
		got := b.NextBackOff()
		lo, hi := time.Duration(float64(want)*0.8), time.Duration(float64(want)*1.2)
		if got < lo || got > hi {
			t.Fatalf("step %d = %v, want within [%v, %v]", i, got, lo, hi)
		}
		want = min(time.Duration(float64(want)*1.6), 10*time.Second)
	}
	if b.NextBackOff() < 0 {
		t.Error("the default schedule stopped; it must run as long as the context allows")
	}
}

func TestBudgetThrottlesAfterFailuresAndRefillsOnSuccess(t *testing.T) {
	b := NewBudget(10, 0.5)
	for i := range 5 {
		if !b.AllowRetry() {
			t.Fatalf("retry refused after %d failures, want allowed while more than half remains", i)
		}
		b.Failure()
	}
	if b.AllowRetry() {
		t.Fatal("retry allowed with half the tokens gone")
	}
	b.Success()
	b.Success()
	if !b.AllowRetry() {
		t.Fatal("retry refused after successes refilled the bucket")
	}
	for range 100 {
		b.Success()
	}
	if b.Tokens() != 10 {
		t.Errorf("tokens = %v, want capped at 10", b.Tokens())
	}
}
