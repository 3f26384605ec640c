// Package pool shares a fixed number of members (sessions, connections)
// among goroutines, in the spirit of pgxpool: Acquire leases the ready
// member with the fewest leases out and never hands out one known to be
// broken; Discard takes a member's generation out of service and replaces it
// in the background through a dial function with its own backoff; callers
// wait, within their context, while members are being replaced.
//
// Each member has generations: the first caller that discards generation N
// starts the one replacement; later discards of N are ignored. However many
// goroutines saw a member fail, it is replaced once.
//
// The package knows nothing of MCP, HTTP, health checks or retry policy.
package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// ErrClosed is returned by Acquire once the Pool is closed.
var ErrClosed = errors.New("pool: closed")

// WaitError is returned by Acquire when ctx ends before a member is ready.
// It wraps the context's error and the last dial error. It is immutable and
// safe to share between goroutines.
type WaitError struct {
	Ctx  error // the context's error: context.DeadlineExceeded or context.Canceled
	Last error // nil if no dial had failed
}

// Error says that no member was ready before the context ended, and the
// last dial's error if one failed.
func (e *WaitError) Error() string {
	if e.Last == nil {
		return fmt.Sprintf("waiting for a member: %v", e.Ctx)
	}
	return fmt.Sprintf("waiting for a member: %v (last dial: %v)", e.Ctx, e.Last)
}

// Unwrap returns the context's error and the last dial error, so that
// errors.Is matches either.
func (e *WaitError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Ctx}
	}
	return []error{e.Ctx, e.Last}
}

// DialFunc makes the next value of member (0 to Size-1). prev is the value
// discarded (the zero value on the first dial) and cause is why (nil on the
// first dial). It may return prev to put it back in service. ctx ends at
// Close, or once the member's dial loop is over: a value must not keep it.
type DialFunc[T comparable] func(ctx context.Context, member int, prev T, cause error) (T, error)

// Config is the behaviour of a Pool. Size and Dial are required. Its
// functions are called from the Pool's goroutines, several at once with
// more than one member, so they must be safe for concurrent use.
type Config[T comparable] struct {
	// Size is the number of members; at least 1.
	Size int
	// Dial makes a member's next value. It is called by the member's dial
	// loop only, one call at a time per member, never with the Pool's lock
	// held.
	Dial DialFunc[T]
	// NewBackOff is the schedule of one member's dial loop; each loop gets
	// a fresh one, and its backoff.Stop ends the loop as a permanent error
	// does. Required.
	NewBackOff func() backoff.BackOff
	// Permanent reports whether a dial error ends the loop: the callers
	// waiting for that member get the error and the member goes Idle, to be
	// dialled again by the next Acquire. Default: backoff.Permanent errors.
	Permanent func(error) bool
	// Release ends a value the Pool no longer holds, on a goroutine of its
	// own that Close waits for. Default: nothing.
	Release func(T)
	// OnState is told of every member's transitions, with the Pool's lock
	// held: it must be quick and must not call the Pool.
	OnState func(member int, from, to State)
	// Drain, if set, says whether a value discarded for cause with leases
	// out stays open until the last of them is released (a value that
	// still works for what is in flight on it), rather than released as
	// soon as the dial loop is through with it (a value whose work in
	// flight is lost anyway, which releasing it ends).
	Drain func(cause error) bool
	// RetryAfter, if set, is how long the other side asked the dial loop
	// to wait after a failed dial (a server that answered "busy, come
	// back in 5s"): the loop waits at least that, backoff or not. 0: no
	// such request.
	RetryAfter func(error) time.Duration
	// OnDialError is told of each failed dial and the pause before the next
	// (backoff.Stop when the loop ends).
	OnDialError func(member int, err error, next time.Duration)
	// StopWaiting, if set, lets an Acquire stop waiting for a member short
	// of its ctx's end: when no member is ready it is asked, with that
	// ctx, before each wait, after every change of the members (a dial
	// failed, a member changed state) and after Wake; a non-nil error ends
	// the wait, and Acquire returns it. It is called without the Pool's
	// lock.
	StopWaiting func(ctx context.Context, w Waiting) error
}

// Waiting is what StopWaiting is told of the members an Acquire waits
// for. A plain value.
type Waiting struct {
	// Failed: every member waited for has failed a dial since its current
	// dial loop began.
	Failed bool
	// Last is the last dial error of the members waited for, nil if none.
	Last error
}

// Pool is a fixed set of members shared by goroutines. It is safe for
// concurrent use.
type Pool[T comparable] struct {
	cfg Config[T]
	wg  sync.WaitGroup // dial loops and releases

	// mu guards the fields below. OnState is called with it held, so a
	// user of the pool must not take a lock of its own around pool calls
	// that it also takes in OnState.
	mu      sync.Mutex
	closed  bool
	members []*member[T]
	changed chan struct{} // closed on every change; made by the first waiter after one, so an idle pool keeps none
	next    int           // where the search for the least-leased member starts, to spread ties
	stats   Stats
}

type member[T comparable] struct {
	index  int
	state  State
	val    T
	gen    uint64
	leases int // out on the generation in service
	// retiring: generations taken out of service while leases on them
	// were out, for a cause Drain accepts. Their values are released when
	// the last lease comes back,
	// as HikariCP closes an evicted connection when it is returned: a
	// call in flight on a discarded session finishes there instead of
	// having it closed under it.
	retiring []retiree[T]
	loop     uint64 // id of the current or last dial loop
	// stopDial ends the context of the current dial loop, nil once it is
	// over. Each loop has a context of its own, not one of the Pool's
	// lifetime: what a dial derives from its context (a timeout) makes the
	// parent keep a map of children and a Done channel for as long as it
	// lives, 0.36 KB of an idle member (BenchmarkIdleClients).
	stopDial  context.CancelFunc
	lastErr   error
	failed    error // permanent error that ended loop failedIn
	failedIn  uint64
	everReady bool
}

// retiree is a generation out of service with leases still out.
type retiree[T comparable] struct {
	gen    uint64
	val    T
	leases int
	done   bool // the dial loop is through with it: release it at the last lease
}

// New returns a Pool of Idle members. It does no I/O until the first
// Acquire.
func New[T comparable](cfg Config[T]) *Pool[T] {
	if cfg.Permanent == nil {
		cfg.Permanent = func(err error) bool {
			var p *backoff.PermanentError
			return errors.As(err, &p)
		}
	}
	p := &Pool[T]{cfg: cfg}
	for i := range cfg.Size {
		p.members = append(p.members, &member[T]{index: i})
	}
	return p
}

// Lease is one caller's use of a member. Release it when done. Its methods
// are safe for concurrent use, though a lease is usually one goroutine's.
type Lease[T comparable] struct {
	pool     *Pool[T]
	member   *member[T]
	gen      uint64
	value    T
	released bool
}

// Value is the leased member's value.
func (l *Lease[T]) Value() T { return l.value }

// Member is the index of the leased member.
func (l *Lease[T]) Member() int { return l.member.index }

// Release gives the lease back. Calling it twice is a no-op.
func (l *Lease[T]) Release() {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.released {
		return
	}
	l.released = true
	m := l.member
	if l.gen == m.gen && m.state == Ready {
		m.leases--
		return
	}
	for i := range m.retiring {
		r := &m.retiring[i]
		if r.gen != l.gen {
			continue
		}
		if r.leases--; r.leases == 0 {
			if r.done && !p.closed {
				p.goRelease(r.val)
			}
			m.retiring = append(m.retiring[:i], m.retiring[i+1:]...)
		}
		return
	}
}

// Discard reports the leased generation broken because of cause: it is
// taken out of service and a replacement is dialled in the background. It
// reports whether this call started the replacement; false means the
// generation was already out of service. The lease stays to be released.
func (l *Lease[T]) Discard(cause error) bool {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.discardLocked(l.member, l.gen, cause)
}

// Acquire leases the ready member with the fewest leases out. If no member
// is ready it starts dialling every idle one, or joins the dials under way,
// and waits within ctx. It fails with a member's permanent dial error if
// every member it waited for failed so, with a *WaitError when ctx ends, and
// with ErrClosed once the Pool is closed.
//
// With Config.StopWaiting set, Acquire may stop waiting short of ctx's end.
func (p *Pool[T]) Acquire(ctx context.Context) (*Lease[T], error) {
	l := new(Lease[T])
	if err := p.AcquireInto(ctx, l); err != nil {
		return nil, err
	}
	return l, nil
}

// AcquireInto is Acquire into l, a Lease in the caller's memory, instead
// of a new one: for a caller that holds its lease in a value of its own
// made anyway, which saves an allocation. l must be a zero Lease or one
// released; on an error it is left as it was.
func (p *Pool[T]) AcquireInto(ctx context.Context, l *Lease[T]) error {
	joined := make(map[int]uint64, 0) // the loop of each member this call waits for
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return ErrClosed
		}
		if m := p.leastLeasedLocked(); m != nil {
			m.leases++
			p.stats.Acquires++
			*l = Lease[T]{pool: p, member: m, gen: m.gen, value: m.val}
			p.mu.Unlock()
			return nil
		}
		var failed, last error
		waiting, allFailed := false, true
		for _, m := range p.members {
			if loop, ok := joined[m.index]; ok && m.failedIn == loop {
				failed = m.failed
				continue
			}
			if m.state == Idle {
				var zero T
				p.startLocked(m, zero, nil)
			}
			joined[m.index] = m.loop
			waiting = true
			if m.lastErr != nil {
				last = m.lastErr
			} else {
				allFailed = false
			}
		}
		if !waiting {
			p.mu.Unlock()
			return failed
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		p.mu.Unlock()
		if p.cfg.StopWaiting != nil {
			if err := p.cfg.StopWaiting(ctx, Waiting{Failed: allFailed, Last: last}); err != nil {
				return err
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			p.mu.Lock()
			for _, m := range p.members {
				if m.lastErr != nil {
					last = m.lastErr
				}
			}
			p.mu.Unlock()
			return &WaitError{Ctx: ctx.Err(), Last: last}
		}
		p.mu.Lock()
	}
}

// Wake has every Acquire waiting for a member ask StopWaiting again:
// something it decides on has changed outside the Pool.
func (p *Pool[T]) Wake() {
	p.mu.Lock()
	if !p.closed {
		p.broadcastLocked()
	}
	p.mu.Unlock()
}

// leastLeasedLocked picks among ready members the one with the fewest leases,
// starting the search after the last pick so that ties take turns.
func (p *Pool[T]) leastLeasedLocked() *member[T] {
	var best *member[T]
	n := len(p.members)
	for i := range n {
		m := p.members[(p.next+i)%n]
		if m.state == Ready && (best == nil || m.leases < best.leases) {
			best = m
		}
	}
	if best != nil {
		p.next = (best.index + 1) % n
	}
	return best
}

// DiscardValue takes v out of service if a member holds it now, as Discard
// does for a lease. It is for callers that learn of a broken value outside a
// lease, such as a health check.
func (p *Pool[T]) DiscardValue(v T, cause error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if m.state == Ready && m.val == v {
			return p.discardLocked(m, m.gen, cause)
		}
	}
	return false
}

func (p *Pool[T]) discardLocked(m *member[T], gen uint64, cause error) bool {
	if m.state != Ready || m.gen != gen {
		return false
	}
	prev := m.val
	var zero T
	m.val = zero
	if m.leases > 0 && p.cfg.Drain != nil && p.cfg.Drain(cause) {
		m.retiring = append(m.retiring, retiree[T]{gen: m.gen, val: prev, leases: m.leases})
	}
	m.leases = 0 // the leases out are the retiree's, or nobody's
	p.stats.Discards++
	p.startLocked(m, prev, cause)
	return true
}

// Values returns the values in service now, by member.
func (p *Pool[T]) Values() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	var vs []T
	for _, m := range p.members {
		if m.state == Ready {
			vs = append(vs, m.val)
		}
	}
	return vs
}

// Close stops the dial loops, releases the values in service, wakes every
// waiter with ErrClosed, and returns once every goroutine the Pool started
// has exited. Leases still out stay valid to release. It is idempotent.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for _, m := range p.members {
			if m.state == Ready {
				p.goRelease(m.val)
			}
			// Close ends everything, in flight or not.
			for _, r := range m.retiring {
				if r.done {
					p.goRelease(r.val)
				}
			}
			m.retiring = nil
			var zero T
			m.val = zero
			p.setStateLocked(m, Closed)
			if m.stopDial != nil {
				m.stopDial()
			}
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Pool[T]) startLocked(m *member[T], prev T, cause error) {
	m.loop++
	m.lastErr = nil
	if m.everReady {
		p.setStateLocked(m, Reconnecting)
	} else {
		p.setStateLocked(m, Connecting)
	}
	// Not a child of a context of the Pool's: see stopDial.
	ctx, stop := context.WithCancel(context.Background())
	m.stopDial = stop
	p.wg.Add(1)
	go p.run(ctx, stop, m, m.loop, prev, cause)
}

// run is one dial loop of member m. It owns prev until it puts a value in
// service or gives up, and releases prev unless the dial handed it back.
//
// ctx is the loop's own, which stop ends (stopDial).
func (p *Pool[T]) run(ctx context.Context, stop context.CancelFunc, m *member[T], loop uint64, prev T, cause error) {
	defer p.wg.Done()
	defer func() {
		stop()
		p.mu.Lock()
		if m.loop == loop { // else stopDial is a later loop's
			m.stopDial = nil
		}
		p.mu.Unlock()
	}()
	b := p.cfg.NewBackOff()
	b.Reset()
	for {
		v, err := p.cfg.Dial(ctx, m.index, prev, cause)
		p.mu.Lock()
		p.stats.Dials++
		if p.closed {
			p.mu.Unlock()
			if err == nil && v != prev {
				p.goRelease(v)
			}
			p.releaseUnlessZero(prev)
			return
		}
		if err == nil {
			m.val, m.gen, m.everReady = v, m.gen+1, true
			p.setStateLocked(m, Ready)
			p.mu.Unlock()
			if v != prev {
				p.releaseUnlessZero(prev)
			}
			return
		}
		p.stats.DialErrors++
		next := backoff.Stop
		if !p.cfg.Permanent(err) {
			next = b.NextBackOff()
			if p.cfg.RetryAfter != nil && next != backoff.Stop {
				next = max(next, p.cfg.RetryAfter(err))
			}
		}
		p.mu.Unlock()
		// OnDialError hears of the failure before any waiter does (outside
		// the lock, as every hook): whatever a caller is told of it, an
		// observer was told first.
		if p.cfg.OnDialError != nil {
			p.cfg.OnDialError(m.index, err, next)
		}
		p.mu.Lock()
		if !p.closed {
			m.lastErr = err
			if next == backoff.Stop {
				m.failed, m.failedIn = err, loop
				p.setStateLocked(m, Idle)
			} else {
				p.broadcastLocked() // waiters may want the newer lastErr
			}
		}
		p.mu.Unlock()
		if next == backoff.Stop {
			p.releaseUnlessZero(prev)
			return
		}
		if wait.Sleep(ctx, next, nil) != wait.Elapsed {
			p.releaseUnlessZero(prev)
			return
		}
	}
}

// releaseUnlessZero releases v, a value the dial loop is through with, once
// no lease on it is out.
func (p *Pool[T]) releaseUnlessZero(v T) {
	var zero T
	if v == zero {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		for _, m := range p.members {
			for i := len(m.retiring) - 1; i >= 0; i-- {
				if r := &m.retiring[i]; r.val == v && !r.done {
					r.done = true
					return
				}
			}
		}
	}
	p.goRelease(v)
}

func (p *Pool[T]) goRelease(v T) {
	if p.cfg.Release == nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.cfg.Release(v)
	}()
}

func (p *Pool[T]) setStateLocked(m *member[T], to State) {
	from := m.state
	m.state = to
	p.broadcastLocked()
	if from != to && p.cfg.OnState != nil {
		p.cfg.OnState(m.index, from, to)
	}
}

func (p *Pool[T]) broadcastLocked() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}
