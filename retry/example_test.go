package retry_test

import (
	"fmt"
	"time"

	"github.com/resilientmcp/resilientmcp/retry"
)

// One Budget is shared by every goroutine of a client: each call deposits,
// each retry withdraws, and when the server fails everything the retries
// stop at about the budget's share of the calls instead of multiplying the
// load.
func ExampleBudget() {
	// Retries may be 20% of the calls of the last 10s, plus a reserve of
	// 10 for a quiet client.
	b := retry.NewBudget(10*time.Second, 1, 0.2)
	for range 100 {
		b.Deposit() // a call
	}
	retries := 0
	for b.TryWithdraw() { // every call failed; retry while the budget lasts
		retries++
	}
	fmt.Println(retries >= 20 && retries <= 40)
	// Output: true
}

// The schedule between reconnect attempts: 100ms, then ×1.6 each time,
// ±20%, at most 10s apart, for as long as the caller's context allows.
func ExampleDefaultBackOff() {
	b := retry.DefaultBackOff()
	for range 3 {
		d := b.NextBackOff()
		fmt.Println(d >= 80*time.Millisecond && d <= 10*time.Second)
	}
	// Output:
	// true
	// true
	// true
}
