package reconnect

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
// hands out new conns, recording when each attempt was made.
type dialer struct {
	mu       sync.Mutex
	errs     []error
	attempts []time.Time
	causes   []error
	next     int
}

func (d *dialer) dial(ctx context.Context, prev *conn, cause error) (*conn, error) {
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

func TestGetDialsOnceForManyCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{}
		s := NewSlot(Config[*conn]{Dial: d.dial})
		defer s.Close()
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				c, gen, err := s.Get(t.Context())
				if err != nil || c.id != 1 || gen != 1 {
					t.Errorf("Get = %v, %d, %v; want conn 1, generation 1", c, gen, err)
				}
			})
		}
		wg.Wait()
		if n := d.count(); n != 1 {
			t.Fatalf("%d dials for 100 concurrent Gets, want 1", n)
		}
	})
}

func TestInvalidateMovesOneGenerationOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{}
		var released []*conn
		var mu sync.Mutex
		s := NewSlot(Config[*conn]{Dial: d.dial, Release: func(c *conn) {
			mu.Lock()
			released = append(released, c)
			mu.Unlock()
		}})
		defer s.Close()
		_, gen, _ := s.Get(t.Context())
		cause := errors.New("session gone")
		var started atomic.Int32
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				if s.Invalidate(gen, cause) {
					started.Add(1)
				}
				c, g, err := s.Get(t.Context())
				if err != nil || c.id != 2 || g != 2 {
					t.Errorf("Get after invalidate = %v, %d, %v; want conn 2, generation 2", c, g, err)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		if started.Load() != 1 || d.count() != 2 {
			t.Fatalf("%d invalidations started a loop and %d dials; want 1 and 2", started.Load(), d.count())
		}
		if d.causes[1] != cause {
			t.Errorf("second dial cause = %v, want %v", d.causes[1], cause)
		}
		if s.Invalidate(gen, cause) {
			t.Error("a stale generation was invalidated")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(released) != 1 || released[0].id != 1 {
			t.Errorf("released %v, want the first conn", released)
		}
	})
}

func TestDialRetriesOnTheBackOffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("connection refused")
		d := &dialer{errs: []error{refused, refused, refused}}
		var states []State
		s := NewSlot(Config[*conn]{
			Dial: d.dial,
			NewBackOff: func() backoff.BackOff {
				return backoff.NewExponentialBackOff(backoff.WithRandomizationFactor(0), backoff.WithInitialInterval(100*time.Millisecond), backoff.WithMultiplier(2))
			},
			OnState: func(_, to State) { states = append(states, to) },
		})
		defer s.Close()
		start := time.Now()
		c, _, err := s.Get(t.Context())
		if err != nil || c.id != 1 {
			t.Fatalf("Get = %v, %v", c, err)
		}
		want := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond}
		for i, at := range d.attempts {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("attempt %d at %v, want %v", i, got, want[i])
			}
		}
		if len(states) != 2 || states[0] != Connecting || states[1] != Ready {
			t.Errorf("states %v, want [Connecting Ready]", states)
		}
	})
}

func TestWaitErrorCarriesLastCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("connection refused")
		d := &dialer{errs: []error{refused, refused, refused, refused, refused}}
		s := NewSlot(Config[*conn]{Dial: d.dial, NewBackOff: constant(time.Second)})
		defer s.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
		defer cancel()
		_, _, err := s.Get(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, refused) {
			t.Fatalf("Get = %v; want deadline exceeded wrapping the dial error", err)
		}
		if n := d.count(); n != 3 {
			t.Errorf("%d dials in 2.5s at 1s intervals, want 3", n)
		}
		// The loop goes on for other callers after this one gave up.
		c, _, err := s.Get(t.Context())
		if err != nil || c == nil {
			t.Fatalf("later Get = %v, %v", c, err)
		}
	})
}

func TestPermanentErrorFailsWaitersAndNextGetRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		denied := backoff.Permanent(errors.New("401"))
		d := &dialer{errs: []error{denied}}
		s := NewSlot(Config[*conn]{Dial: d.dial, NewBackOff: constant(time.Hour)})
		defer s.Close()
		if _, _, err := s.Get(t.Context()); !errors.Is(err, denied) {
			t.Fatalf("Get = %v, want the permanent error", err)
		}
		if s.State() != Idle {
			t.Errorf("state %v after permanent failure, want Idle", s.State())
		}
		c, _, err := s.Get(t.Context())
		if err != nil || c.id != 1 || d.count() != 2 {
			t.Fatalf("next Get = %v, %v after %d dials; want a new dial that succeeds", c, err, d.count())
		}
	})
}

func TestDialMayReviveThePreviousValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var released atomic.Int32
		var first *conn
		s := NewSlot(Config[*conn]{
			Dial: func(_ context.Context, prev *conn, _ error) (*conn, error) {
				if prev != nil {
					return prev, nil
				}
				first = &conn{id: 1}
				return first, nil
			},
			Release: func(*conn) { released.Add(1) },
		})
		_, gen, _ := s.Get(t.Context())
		s.Invalidate(gen, errors.New("network blip"))
		c, gen2, err := s.Get(t.Context())
		if err != nil || c != first || gen2 != gen+1 {
			t.Fatalf("Get = %v, %d, %v; want the first conn back in a new generation", c, gen2, err)
		}
		synctest.Wait()
		if released.Load() != 0 {
			t.Error("a revived value was released")
		}
		s.Close()
		if released.Load() != 1 {
			t.Errorf("Close released %d values, want 1", released.Load())
		}
	})
}

func TestCloseWakesWaitersAndStopsTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{errs: make([]error, 1000)}
		for i := range d.errs {
			d.errs[i] = errors.New("refused")
		}
		s := NewSlot(Config[*conn]{Dial: d.dial, NewBackOff: constant(time.Second)})
		errc := make(chan error)
		go func() {
			_, _, err := s.Get(context.Background())
			errc <- err
		}()
		time.Sleep(3500 * time.Millisecond)
		s.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiter got %v, want ErrClosed", err)
		}
		n := d.count()
		time.Sleep(10 * time.Second)
		if d.count() != n || n != 4 {
			t.Errorf("%d dials before Close and %d after, want 4 and none", n, d.count()-n)
		}
		if _, _, err := s.Get(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("Get after Close = %v", err)
		}
	})
}
