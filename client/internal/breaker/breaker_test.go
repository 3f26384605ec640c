package breaker

import (
	"testing"
	"time"
)

type change struct {
	open  bool
	since time.Time
}

// TestBreakerOpensAfterTheOutageAndClosesWhenReached: an outage that
// began longer than after ago opens the breaker (told to changed, then
// opened); the server reached closes it, and a nil Breaker never opens.
func TestBreakerOpensAfterTheOutageAndClosesWhenReached(t *testing.T) {
	const after = time.Minute
	changes := make(chan change, 4)
	opened := make(chan struct{}, 4)
	b := New(after, func(open bool, since time.Time) { changes <- change{open, since} }, func() { opened <- struct{}{} })
	defer b.Stop()

	if b.Open() || !b.OutageSince().IsZero() {
		t.Fatal("a new breaker is open or in an outage")
	}
	began := time.Now().Add(-after - time.Second) // the timer fires at once
	b.Failed(began)
	b.Failed(time.Now()) // the outage began earlier: ignored
	if got := b.OutageSince(); !got.Equal(began) {
		t.Errorf("OutageSince = %v; want %v", got, began)
	}
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the breaker did not open")
	}
	if c := <-changes; !c.open || !c.since.Equal(began) {
		t.Errorf("changed(%v, %v); want (true, %v)", c.open, c.since, began)
	}
	if !b.Open() || b.Why() == "" {
		t.Error("the breaker is not open after its outage")
	}

	b.Reached()
	if c := <-changes; c.open || !c.since.Equal(began) {
		t.Errorf("changed(%v, %v); want (false, %v)", c.open, c.since, began)
	}
	if b.Open() || !b.OutageSince().IsZero() {
		t.Error("the breaker is still open once the server was reached")
	}
	b.Reached() // no outage: nothing told
	if len(changes) != 0 || len(opened) != 0 {
		t.Errorf("%d changes and %d openings more than expected", len(changes), len(opened))
	}

	var none *Breaker
	none.Failed(began)
	none.Reached()
	none.Stop()
	if none.Open() || !none.OutageSince().IsZero() {
		t.Error("a nil breaker is open or in an outage")
	}
}

// TestBreakerDoesNotOpenOnAShortOutage: an outage ended before after has
// passed never opens the breaker.
func TestBreakerDoesNotOpenOnAShortOutage(t *testing.T) {
	b := New(time.Hour, func(bool, time.Time) { t.Error("changed was called") }, func() { t.Error("opened was called") })
	defer b.Stop()
	b.Failed(time.Now())
	b.Reached()
	b.trip() // as the timer would, late
	if b.Open() {
		t.Error("the breaker opened after a short outage")
	}
}

// TestStoppedBreakerFollowsNoOutage: a failure told after Stop (a session
// lost as the client closes it) starts no outage and arms no timer, which
// would open the breaker, and tell changed and opened, after Close.
func TestStoppedBreakerFollowsNoOutage(t *testing.T) {
	const after = time.Minute
	b := New(after, func(bool, time.Time) { t.Error("changed told after Stop") }, func() { t.Error("opened after Stop") })
	b.Stop()
	b.Failed(time.Now().Add(-after - time.Second)) // a timer would fire at once
	if !b.OutageSince().IsZero() || b.Open() {
		t.Fatalf("after Stop: outage since %v, open %v; want none", b.OutageSince(), b.Open())
	}
}
