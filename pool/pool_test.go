package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type conn struct{ id int }

// dialer is a scripted DialFunc: it fails with the queued errors first, then
// hands out new conns, recording when each dial was made and why.
type dialer struct {
	mu       sync.Mutex
	errs     []error
	attempts []time.Time
	causes   []error
	next     int
}

func (d *dialer) dial(_ context.Context, _ int, _ *conn, cause error) (*conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.attempts = append(d.attempts, time.Now())
	d.causes = append(d.causes, cause)
	if len(d.errs) > 0 {
		err := d.errs[0]
		d.errs = d.errs[1:]
		return nil, err
	}
	d.next++
	return &conn{id: d.next}, nil
}

func (d *dialer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.attempts)
}

func constant(d time.Duration) func() backoff.BackOff {
	return func() backoff.BackOff { return backoff.NewConstantBackOff(d) }
}

func newPool(size int, d *dialer, opts ...func(*Config[*conn])) *Pool[*conn] {
	cfg := Config[*conn]{Size: size, Dial: d.dial, NewBackOff: constant(time.Second)}
	for _, o := range opts {
		o(&cfg)
	}
	return New(cfg)
}

func TestAcquireLeasesTheLeastLeasedMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{}
		p := newPool(4, d)
		defer p.Close()
		first, err := p.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // every member dialled
		if d.count() != 4 {
			t.Fatalf("%d dials for a pool of 4", d.count())
		}
		var leases []*Lease[*conn]
		per := map[int]int{first.Member(): 1}
		for range 7 {
			l, err := p.Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			per[l.Member()]++
			leases = append(leases, l)
		}
		for m, n := range per {
			if n != 2 {
				t.Errorf("member %d has %d of 8 leases, want 2 each: %v", m, n, per)
			}
		}
		// Free member 2's leases: the next lease goes to it.
		for _, l := range append(leases, first) {
			if l.Member() == 2 {
				l.Release()
			}
		}
		if l, _ := p.Acquire(t.Context()); l.Member() != 2 {
			t.Errorf("leased member %d, want the idle member 2", l.Member())
		}
		if s := p.Stats(); s.Ready != 4 || s.Leased != 7 || s.Acquires != 9 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestDiscardReplacesOneGenerationOnceAndNeverHandsItOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{}
		var released atomic.Int32
		p := newPool(2, d, func(c *Config[*conn]) { c.Release = func(*conn) { released.Add(1) } })
		defer p.Close()
		l, _ := p.Acquire(t.Context())
		synctest.Wait()
		broken := l.Value()
		cause := errors.New("session gone")
		var started atomic.Int32
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				if l.Discard(cause) {
					started.Add(1)
				}
				other, err := p.Acquire(t.Context())
				if err != nil || other.Value() == broken {
					t.Errorf("Acquire after discard = %v, %v; never the discarded value", other.Value(), err)
				}
				other.Release()
			})
		}
		wg.Wait()
		l.Release()
		synctest.Wait()
		if started.Load() != 1 || d.count() != 3 || released.Load() != 1 {
			t.Fatalf("%d discards started a replacement, %d dials, %d released; want 1, 3, 1", started.Load(), d.count(), released.Load())
		}
		if d.causes[2] != cause {
			t.Errorf("replacement dial cause = %v", d.causes[2])
		}
		if p.DiscardValue(broken, cause) {
			t.Error("a value no longer in service was discarded")
		}
		if s := p.Stats(); s.Ready != 2 || s.Discards != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestAcquireWaitsForAReplacementOnTheBackOffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("connection refused")
		d := &dialer{}
		p := New(Config[*conn]{Size: 1, Dial: d.dial, NewBackOff: func() backoff.BackOff {
			return backoff.NewExponentialBackOff(backoff.WithRandomizationFactor(0), backoff.WithInitialInterval(100*time.Millisecond), backoff.WithMultiplier(2))
		}})
		defer p.Close()
		l, _ := p.Acquire(t.Context())
		l.Release()
		d.mu.Lock()
		d.errs = []error{refused, refused, refused}
		d.mu.Unlock()
		start := time.Now()
		l.Discard(refused)
		l2, err := p.Acquire(t.Context())
		if err != nil || l2.Value().id != 2 {
			t.Fatalf("Acquire = %v, %v", l2, err)
		}
		want := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond}
		for i, at := range d.attempts[1:] {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("attempt %d at %v, want %v", i, got, want[i])
			}
		}
	})
}

// A generation discarded while leases are out on it is released when the
// last of them comes back, not under them.
func TestDiscardedValueIsReleasedWhenItsLastLeaseReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var released atomic.Int32
		d := &dialer{}
		p := newPool(1, d, func(c *Config[*conn]) {
			c.Release = func(*conn) { released.Add(1) }
			c.Drain = func(error) bool { return true }
		})
		defer p.Close()
		a, _ := p.Acquire(t.Context())
		b, _ := p.Acquire(t.Context())
		a.Discard(errors.New("gone"))
		c, err := p.Acquire(t.Context()) // the replacement
		if err != nil || c.Value() == a.Value() {
			t.Fatalf("Acquire after the discard = %v, %v", c, err)
		}
		synctest.Wait()
		if n := released.Load(); n != 0 {
			t.Fatalf("the discarded value was released with 2 leases out on it")
		}
		a.Release()
		synctest.Wait()
		if n := released.Load(); n != 0 {
			t.Fatalf("released with 1 lease still out")
		}
		b.Release()
		synctest.Wait()
		if n := released.Load(); n != 1 {
			t.Fatalf("%d releases after the last lease came back, want 1", n)
		}
		c.Release()
		synctest.Wait()
		if n := released.Load(); n != 1 {
			t.Fatalf("the value in service was released: %d releases", n)
		}
	})
}

// busyError is a dial failure whose other side asked for a pause.
type busyError struct{ after time.Duration }

func (e busyError) Error() string { return "busy" }

func TestDialLoopWaitsAsLongAsTheOtherSideAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{errs: []error{busyError{5 * time.Second}, errors.New("refused")}}
		p := newPool(1, d, func(c *Config[*conn]) {
			c.NewBackOff = constant(100 * time.Millisecond)
			c.RetryAfter = func(err error) time.Duration {
				var b busyError
				if errors.As(err, &b) {
					return b.after
				}
				return 0
			}
		})
		defer p.Close()
		start := time.Now()
		l, err := p.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
		want := []time.Duration{0, 5 * time.Second, 5*time.Second + 100*time.Millisecond}
		for i, at := range d.attempts {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("attempt %d at %v, want %v (the busy answer's pause, then the backoff's)", i, got, want[i])
			}
		}
	})
}

func TestWaitErrorCarriesTheLastCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("connection refused")
		d := &dialer{errs: []error{refused, refused, refused, refused}}
		p := newPool(1, d)
		defer p.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
		defer cancel()
		_, err := p.Acquire(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, refused) {
			t.Fatalf("Acquire = %v; want the deadline wrapping the dial error", err)
		}
		if d.count() != 3 {
			t.Errorf("%d dials in 2.5s at 1s intervals, want 3", d.count())
		}
		// The loop goes on for the next caller.
		if l, err := p.Acquire(t.Context()); err != nil || l == nil {
			t.Fatalf("later Acquire = %v", err)
		}
	})
}

func TestPermanentErrorFailsWaitersAndTheNextAcquireRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		denied := backoff.Permanent(errors.New("401"))
		d := &dialer{errs: []error{denied, denied}}
		p := newPool(2, d)
		defer p.Close()
		if _, err := p.Acquire(t.Context()); !errors.Is(err, denied) {
			t.Fatalf("Acquire = %v, want the permanent error", err)
		}
		if d.count() != 2 {
			t.Fatalf("%d dials; a permanent error must not be retried", d.count())
		}
		if l, err := p.Acquire(t.Context()); err != nil || l == nil {
			t.Fatalf("next Acquire = %v; want a new dial that succeeds", err)
		}
	})
}

func TestDialMayReviveThePreviousValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var released atomic.Int32
		first := &conn{id: 1}
		p := New(Config[*conn]{Size: 1, NewBackOff: constant(time.Second),
			Dial: func(_ context.Context, _ int, prev *conn, _ error) (*conn, error) {
				if prev != nil {
					return prev, nil
				}
				return first, nil
			},
			Release: func(*conn) { released.Add(1) },
		})
		l, _ := p.Acquire(t.Context())
		l.Discard(errors.New("network blip"))
		l.Release()
		l2, err := p.Acquire(t.Context())
		if err != nil || l2.Value() != first {
			t.Fatalf("Acquire = %v, %v; want the first value back", l2.Value(), err)
		}
		if l.Discard(errors.New("stale")) {
			t.Error("a stale lease discarded the revived generation")
		}
		synctest.Wait()
		if released.Load() != 0 {
			t.Error("a revived value was released")
		}
		l2.Release()
		p.Close()
		if released.Load() != 1 {
			t.Errorf("Close released %d values, want 1", released.Load())
		}
	})
}

func TestCloseWakesWaitersAndStopsDialling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{errs: make([]error, 1000)}
		for i := range d.errs {
			d.errs[i] = errors.New("refused")
		}
		var states []State
		p := newPool(1, d, func(c *Config[*conn]) { c.OnState = func(_ int, _, to State) { states = append(states, to) } })
		errc := make(chan error)
		go func() {
			_, err := p.Acquire(context.Background())
			errc <- err
		}()
		time.Sleep(3500 * time.Millisecond)
		p.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiter got %v, want ErrClosed", err)
		}
		n := d.count()
		time.Sleep(10 * time.Second)
		if d.count() != n || n != 4 {
			t.Errorf("%d dials before Close and %d after; want 4 and none", n, d.count()-n)
		}
		if _, err := p.Acquire(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("Acquire after Close = %v", err)
		}
		if len(states) != 2 || states[0] != Connecting || states[1] != Closed {
			t.Errorf("states %v, want [Connecting Closed]", states)
		}
	})
}

// StopWaiting is asked while an Acquire waits: before the first wait with
// the dial under way (not failed), after the dial failed (Failed, Last),
// and after Wake; its error ends the wait.
func TestStopWaitingEndsTheWaitWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("refused")
		d := &dialer{errs: []error{refused, refused, refused, refused}}
		var mu sync.Mutex
		var told []Waiting
		var stopNow atomic.Bool
		stop := errors.New("stop")
		p := newPool(1, d, func(c *Config[*conn]) {
			c.StopWaiting = func(ctx context.Context, w Waiting) error {
				mu.Lock()
				told = append(told, w)
				mu.Unlock()
				if stopNow.Load() {
					return stop
				}
				return nil
			}
		})
		defer p.Close()
		done := make(chan error, 1)
		go func() {
			_, err := p.Acquire(t.Context())
			done <- err
		}()
		synctest.Wait()
		mu.Lock()
		if len(told) < 2 || told[0].Failed || !told[len(told)-1].Failed || !errors.Is(told[len(told)-1].Last, refused) {
			t.Errorf("told %+v; want a wait before the dial failed, then one after, with its error", told)
		}
		mu.Unlock()
		stopNow.Store(true)
		p.Wake()
		synctest.Wait()
		select {
		case err := <-done:
			if err != stop {
				t.Fatalf("Acquire ended with %v, want StopWaiting's error", err)
			}
		default:
			t.Fatal("Wake did not have the waiting Acquire ask again")
		}
	})
}

// AcquireInto fills a lease of the caller's; a released one may be filled
// again, and its Release and Discard act on the lease it holds now.
func TestAcquireIntoReusesTheCallersLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{}
		p := newPool(1, d)
		defer p.Close()
		var l Lease[*conn]
		if err := p.AcquireInto(t.Context(), &l); err != nil {
			t.Fatal(err)
		}
		first := l.Value()
		if s := p.Stats(); s.Leased != 1 {
			t.Fatalf("stats %+v after AcquireInto, want 1 leased", s)
		}
		l.Release()
		l.Release() // a second Release of the same lease is a no-op
		if s := p.Stats(); s.Leased != 0 {
			t.Fatalf("stats %+v after Release, want none leased", s)
		}
		if err := p.AcquireInto(t.Context(), &l); err != nil || l.Value() != first {
			t.Fatalf("AcquireInto again = %v, %v; want the same member's %v", err, l.Value(), first)
		}
		if !l.Discard(errors.New("broken")) {
			t.Fatal("Discard of the refilled lease started no replacement")
		}
		l.Release()
		synctest.Wait()
		if err := p.AcquireInto(t.Context(), &l); err != nil || l.Value() == first {
			t.Fatalf("AcquireInto after Discard = %v, %v; want a new value", err, l.Value())
		}
		l.Release()
		p.Close()
		if err := p.AcquireInto(t.Context(), &l); !errors.Is(err, ErrClosed) {
			t.Fatalf("AcquireInto after Close = %v, want ErrClosed", err)
		}
	})
}

// A failed dial is told to OnDialError before any waiting Acquire hears of
// it: a caller that gives up on the failure (StopWaiting) never does so
// before an observer was told of it.
func TestOnDialErrorIsToldBeforeAWaiterSeesTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("refused")
		d := &dialer{errs: []error{refused, refused, refused, refused}}
		var toldDialError atomic.Bool
		var early atomic.Int32
		p := newPool(1, d, func(c *Config[*conn]) {
			c.OnDialError = func(int, error, time.Duration) {
				// Give a waiter woken too soon time to ask first.
				time.Sleep(time.Millisecond)
				toldDialError.Store(true)
			}
			c.StopWaiting = func(ctx context.Context, w Waiting) error {
				if w.Failed && !toldDialError.Load() {
					early.Add(1)
				}
				if w.Failed {
					return w.Last
				}
				return nil
			}
		})
		defer p.Close()
		if _, err := p.Acquire(t.Context()); !errors.Is(err, refused) {
			t.Fatalf("Acquire = %v, want the dial's error", err)
		}
		if n := early.Load(); n != 0 {
			t.Fatalf("a waiter saw the failed dial %d times before OnDialError was told of it", n)
		}
	})
}

// A member in service keeps nothing of its dial loop: the context its dial
// ran under ends with the loop, so that what the dial derived from it (a
// timeout) leaves nothing behind in a context that lives on (an idle
// client's pool, BenchmarkIdleClients). A dial waiting out its backoff still
// ends at Close.
func TestDialContextEndsWithTheDialLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dialed []context.Context
		d := &dialer{errs: []error{errors.New("refused")}}
		p := newPool(1, d, func(c *Config[*conn]) {
			c.Dial = func(ctx context.Context, member int, prev *conn, cause error) (*conn, error) {
				dialed = append(dialed, ctx) // one dial loop at a time: no race
				return d.dial(ctx, member, prev, cause)
			}
		})
		defer p.Close()
		l, err := p.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
		synctest.Wait()
		if len(dialed) != 2 {
			t.Fatalf("%d dials, want a refused one and the one in service", len(dialed))
		}
		if dialed[1].Err() == nil {
			t.Error("the context of the dial loop outlives it, though its member is in service")
		}

		p.DiscardValue(l.Value(), errors.New("lost"))
		d.mu.Lock()
		d.errs = []error{errors.New("refused")}
		d.mu.Unlock()
		synctest.Wait() // the next dial is refused: waiting out its backoff
		if len(dialed) != 3 || dialed[2].Err() != nil {
			t.Fatalf("%d dials; the third's context ended (%v) before Close", len(dialed), dialed[len(dialed)-1].Err())
		}
		p.Close()
		if dialed[2].Err() == nil {
			t.Error("Close left the context of a dial loop waiting out its backoff")
		}
	})
}
