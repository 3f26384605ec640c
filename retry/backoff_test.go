package retry

import (
	"math"
	"testing"
	"testing/synctest"
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

func TestBudgetAbsorbsABurstButBoundsSteadyRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(10*time.Second, 10, 0.2)
		// A burst: 64 calls fail at once and all retry.
		for i := range 64 {
			if !b.TryWithdraw() {
				t.Fatalf("retry %d of a burst refused with a full budget", i)
			}
		}
		// A server that fails everything: 1000 calls a second, each wanting
		// two retries, for ten seconds.
		retries := 0
		for range 10 {
			for range 1000 {
				b.Deposit()
				for range 2 {
					if b.TryWithdraw() {
						retries++
					}
				}
			}
			time.Sleep(time.Second)
		}
		// Allowed: the 36 left from the burst, 20% of 10000 calls and 10 a
		// second for the 9 seconds slept between the batches.
		if want := 36 + 2000 + 90; retries > want || retries < want-1 {
			t.Errorf("%d retries for 10000 failing calls, want about %d", retries, want)
		}
		time.Sleep(time.Minute)
		if got := b.balance(); got != 100 {
			t.Errorf("balance %v after a quiet minute, want the 100 a 10s window saves", got)
		}
	})
}

func TestBudgetLetsABusyClientRetryABurstBeyondTheReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(10*time.Second, 10, 0.2)
		// 3000 calls in the last second, then a restart fails 256 of them.
		for range 3000 {
			b.Deposit()
		}
		time.Sleep(time.Second)
		for i := range 256 {
			if !b.TryWithdraw() {
				t.Fatalf("retry %d of 256 refused after 3000 calls", i)
			}
		}
		// An hour later the deposits have expired: only the reserve is left.
		time.Sleep(time.Hour)
		if got := b.balance(); got != 100 {
			t.Errorf("balance %v an hour later, want the reserve of 100", got)
		}
	})
}

func TestBudgetCountsEveryConcurrentDeposit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(10*time.Second, 1, 0.2)
		done := make(chan struct{})
		for range 8 {
			go func() {
				defer func() { done <- struct{}{} }()
				for range 1000 {
					b.Deposit()
				}
			}()
		}
		for range 8 {
			<-done
		}
		// 20% of 8000 deposits, and the reserve of 10; no time has passed.
		if got := b.balance(); got != 1600+10 {
			t.Errorf("balance %v after 8000 deposits from 8 goroutines, want 1610", got)
		}
		// A window later they have decayed by e; the reserve is full.
		time.Sleep(10 * time.Second)
		b.Deposit()
		if got, want := b.balance(), math.Floor(1600/math.E)+10; got != want {
			t.Errorf("balance %v a window later, want %v", got, want)
		}
	})
}
