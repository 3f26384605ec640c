package reconnect

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// State is where a Slot stands. The names follow grpc-go's connectivity
// states.
type State int

const (
	Idle         State = iota // no value and no dial under way: before the first Get, or after a permanent dial error
	Connecting                // the first dial loop is under way
	Ready                     // a value is in service
	Reconnecting              // the value was taken out of service; a dial loop is under way
	Closed                    // Close was called
)

func (s State) String() string {
	switch s {
	case Idle:
		return "Idle"
	case Connecting:
		return "Connecting"
	case Ready:
		return "Ready"
	case Reconnecting:
		return "Reconnecting"
	case Closed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ErrClosed is returned by Get once the Slot is closed.
var ErrClosed = errors.New("reconnect: closed")

// WaitError is returned by Get when ctx ends before a value is in service.
// It wraps both the context's error and the last dial error, so callers can
// tell "deadline exceeded" and "because the server refuses connections" apart
// with errors.Is.
type WaitError struct {
	Ctx  error // ctx.Err()
	Last error // the last dial error, or nil if no attempt had finished
}

func (e *WaitError) Error() string {
	if e.Last == nil {
		return fmt.Sprintf("waiting for a connection: %v", e.Ctx)
	}
	return fmt.Sprintf("waiting for a connection: %v (last attempt: %v)", e.Ctx, e.Last)
}

func (e *WaitError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Ctx}
	}
	return []error{e.Ctx, e.Last}
}

// DialFunc makes the value of the next generation. prev is the value that was
// taken out of service (the zero value on the first dial) and cause is why
// (nil on the first dial). It may return prev to put it back in service, for
// instance after checking that only the network, not the session, was lost.
// A dial error is retried after a pause from the BackOff, unless
// Config.Permanent says otherwise.
type DialFunc[T comparable] func(ctx context.Context, prev T, cause error) (T, error)

// Config is the behaviour of a Slot. Only Dial is required.
type Config[T comparable] struct {
	Dial DialFunc[T]
	// NewBackOff returns the schedule of one dial loop; each loop gets a fresh
	// one. Default: DefaultBackOff.
	NewBackOff func() backoff.BackOff
	// Permanent reports whether a dial error must end the loop: the callers
	// waiting for it get the error at once and the Slot goes Idle, so that the
	// next Get tries again instead of the Slot hammering a server that said
	// no. Default: only backoff.Permanent errors.
	Permanent func(error) bool
	// Release ends a value the Slot no longer holds: one replaced by a newer
	// generation, or the one in service at Close. It runs on a goroutine of
	// its own, which Close waits for. Default: nothing.
	Release func(T)
	// OnState is told of every transition. It is called with the Slot's lock
	// held, so it must be quick and must not call the Slot.
	OnState func(from, to State)
	// OnDialError is told of each failed dial and the pause before the next
	// one (backoff.Stop when the loop ends).
	OnDialError func(err error, next time.Duration)
}

// Slot holds one value per generation and replaces it in the background.
//
// Get hands out the value in service. Invalidate takes generation N out of
// service and starts one dial loop for N+1; later reports about N are
// ignored, and everyone who calls Get meanwhile waits for N+1. The loop pauses
// between attempts by the BackOff and runs until it succeeds, fails
// permanently, or the Slot is closed: it does not depend on any caller's
// context, so a caller giving up does not abandon the reconnect for the others.
//
// A Slot is safe for concurrent use.
type Slot[T comparable] struct {
	cfg    Config[T]
	ctx    context.Context // ends at Close; dials run under it
	cancel context.CancelFunc
	wg     sync.WaitGroup // dial loops and releases

	mu        sync.Mutex
	state     State
	val       T
	gen       uint64 // generation of val; 0 before the first
	loop      uint64 // id of the current or last dial loop
	lastErr   error  // last dial error of the current or last loop
	failed    error  // permanent error that ended loop failedIn
	failedIn  uint64
	changed   chan struct{} // closed and replaced on every change
	everReady bool
}

// NewSlot returns an Idle Slot. It does no I/O until the first Get.
func NewSlot[T comparable](cfg Config[T]) *Slot[T] {
	if cfg.NewBackOff == nil {
		cfg.NewBackOff = DefaultBackOff
	}
	if cfg.Permanent == nil {
		cfg.Permanent = func(err error) bool {
			var p *backoff.PermanentError
			return errors.As(err, &p)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Slot[T]{cfg: cfg, ctx: ctx, cancel: cancel, changed: make(chan struct{})}
}

// Get returns the value in service and its generation. If there is none it
// starts a dial loop, or joins the one under way, and waits for it within ctx.
// It fails with the loop's error if the loop it waited for failed
// permanently, with a *WaitError if ctx ends first, and with ErrClosed once
// the Slot is closed.
func (s *Slot[T]) Get(ctx context.Context) (T, uint64, error) {
	var zero T
	var joined uint64 // the loop this call waits for
	s.mu.Lock()
	for {
		if joined != 0 && joined == s.failedIn {
			err := s.failed
			s.mu.Unlock()
			return zero, 0, err
		}
		switch {
		case s.state == Closed:
			s.mu.Unlock()
			return zero, 0, ErrClosed
		case s.state == Ready:
			v, g := s.val, s.gen
			s.mu.Unlock()
			return v, g, nil
		case s.state == Idle:
			s.startLocked(zero, nil)
		}
		joined = s.loop
		changed, last := s.changed, s.lastErr
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			s.mu.Lock()
			if s.loop == joined && s.lastErr != nil {
				last = s.lastErr
			}
			s.mu.Unlock()
			return zero, 0, &WaitError{Ctx: ctx.Err(), Last: last}
		}
		s.mu.Lock()
	}
}

// Current returns the value in service without waiting or dialing.
func (s *Slot[T]) Current() (T, uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Ready {
		var zero T
		return zero, 0, false
	}
	return s.val, s.gen, true
}

// Invalidate takes generation gen out of service because of cause, and
// starts the dial loop for the next one. It reports whether this call did so:
// false means gen is no longer in service (someone else reported it first, or
// the Slot is closed), and the caller should simply Get again.
func (s *Slot[T]) Invalidate(gen uint64, cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Ready || s.gen != gen {
		return false
	}
	prev := s.val
	var zero T
	s.val = zero
	s.startLocked(prev, cause)
	return true
}

// State reports where the Slot stands.
func (s *Slot[T]) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Close stops the dial loop, releases the value in service, wakes every
// waiter with ErrClosed, and returns once every goroutine the Slot started
// has exited. It is idempotent.
func (s *Slot[T]) Close() {
	s.mu.Lock()
	if s.state != Closed {
		if s.state == Ready {
			s.goRelease(s.val)
		}
		var zero T
		s.val = zero
		s.setStateLocked(Closed)
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Slot[T]) startLocked(prev T, cause error) {
	s.loop++
	s.lastErr = nil
	if s.everReady {
		s.setStateLocked(Reconnecting)
	} else {
		s.setStateLocked(Connecting)
	}
	s.wg.Add(1)
	go s.run(s.loop, prev, cause)
}

// run is one dial loop. It owns prev until it puts a value in service or
// gives up, and releases prev unless the dial handed it back.
func (s *Slot[T]) run(loop uint64, prev T, cause error) {
	defer s.wg.Done()
	b := s.cfg.NewBackOff()
	b.Reset()
	for {
		v, err := s.cfg.Dial(s.ctx, prev, cause)
		s.mu.Lock()
		if s.state == Closed {
			s.mu.Unlock()
			if err == nil && v != prev {
				s.goRelease(v)
			}
			s.releaseUnlessZero(prev)
			return
		}
		if err == nil {
			s.val, s.gen, s.everReady = v, s.gen+1, true
			s.setStateLocked(Ready)
			s.mu.Unlock()
			if v != prev {
				s.releaseUnlessZero(prev)
			}
			return
		}
		s.lastErr = err
		next := backoff.Stop
		if !s.cfg.Permanent(err) {
			next = b.NextBackOff()
		}
		if next == backoff.Stop {
			s.failed, s.failedIn = err, loop
			s.setStateLocked(Idle)
		} else {
			s.broadcastLocked() // waiters may want the newer lastErr
		}
		s.mu.Unlock()
		if s.cfg.OnDialError != nil {
			s.cfg.OnDialError(err, next)
		}
		if next == backoff.Stop {
			s.releaseUnlessZero(prev)
			return
		}
		t := time.NewTimer(next)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			s.releaseUnlessZero(prev)
			return
		}
	}
}

func (s *Slot[T]) releaseUnlessZero(v T) {
	var zero T
	if v != zero {
		s.goRelease(v)
	}
}

func (s *Slot[T]) goRelease(v T) {
	if s.cfg.Release == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.cfg.Release(v)
	}()
}

func (s *Slot[T]) setStateLocked(to State) {
	from := s.state
	s.state = to
	s.broadcastLocked()
	if from != to && s.cfg.OnState != nil {
		s.cfg.OnState(from, to)
	}
}

func (s *Slot[T]) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
