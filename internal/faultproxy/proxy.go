// Package faultproxy is a fault-injecting TCP proxy on 127.0.0.1 for
// end-to-end tests, modelled on toxiproxy's toxics. It lets a test make the
// network between an HTTP client and a real server reset, drop, stall, slow
// down or refuse connections at a chosen moment.
package faultproxy

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards every connection accepted on its loopback listener to a
// target address and injects faults into that traffic on demand.
//
// A Proxy is safe for concurrent use by multiple goroutines: tests typically
// flip faults from the test goroutine while client requests are in flight.
type Proxy struct {
	target string
	addr   string    // fixed at New so clients can reconnect after SetRefuse(false)
	start  time.Time // monotonic origin for idle bookkeeping

	// ctx is cancelled by Close to interrupt upstream dials and latency sleeps.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	idleChanged chan struct{} // wakes the idle reaper when the idle limit changes

	accepted, dials    atomic.Int64
	closeIdle, latency atomic.Int64 // time.Duration
	blackhole          atomic.Bool

	armMu sync.Mutex
	armed int

	tapping atomic.Bool
	tapMu   sync.Mutex
	tapped  []*conn // every connection that forwarded bytes while tapping

	// mu guards the fields below. Lock order: Proxy.mu before conn.mu.
	mu     sync.Mutex
	ln     net.Listener // nil while refusing or closed
	closed bool
	conns  map[*conn]struct{}
}

// New starts a proxy listening on 127.0.0.1:0 that forwards every accepted
// connection to target ("127.0.0.1:port").
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:      target,
		addr:        ln.Addr().String(),
		start:       time.Now(),
		ctx:         ctx,
		cancel:      cancel,
		idleChanged: make(chan struct{}, 1),
		ln:          ln,
		conns:       make(map[*conn]struct{}),
	}
	p.wg.Add(2)
	go p.acceptLoop(ln)
	go p.reapIdle()
	return p, nil
}

// Addr returns the "127.0.0.1:port" address of the listener. It stays the
// same across SetRefuse(true) and SetRefuse(false).
func (p *Proxy) Addr() string { return p.addr }

// URL returns "http://" + Addr() + path.
func (p *Proxy) URL(path string) string { return "http://" + p.addr + path }

// Close stops listening, closes every connection and waits until every
// goroutine the proxy started has exited. It is idempotent and always
// returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		if p.ln != nil {
			p.ln.Close()
			p.ln = nil
		}
		for c := range p.conns {
			c.kill(false)
		}
	}
	p.mu.Unlock()
	// No wg.Add can happen once closed is set, so Wait cannot race with it.
	p.wg.Wait()
	return nil
}

// ResetAll resets every open connection now, on both the client and the
// upstream side, so the client sees ECONNRESET.
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.kill(true)
	}
}

// DropAll silently drops every open connection, like a NAT or load balancer
// that forgot the flow: the upstream side is closed, the client is told
// nothing until it next sends bytes on the connection, which are answered
// with a reset. The client therefore sees ECONNRESET, not EOF, on its next
// request over that connection. Dropped connections are exempt from
// SetCloseIdle, since the flow they model no longer exists to be closed.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.drop()
	}
}

// SetCloseIdle makes the proxy close, gracefully (FIN to the client),
// connections that carried no bytes in either direction for longer than d.
// Zero disables it.
func (p *Proxy) SetCloseIdle(d time.Duration) {
	p.closeIdle.Store(int64(d))
	select {
	case p.idleChanged <- struct{}{}:
	default: // a wake-up is already pending; it will read the new value
	}
}

// SetBlackhole, while on, reads and discards every byte on existing and new
// connections, in both directions, and closes nothing. Turning it off
// resumes forwarding of new bytes only; discarded bytes stay lost.
func (p *Proxy) SetBlackhole(on bool) { p.blackhole.Store(on) }

// BlackholeAll makes every connection open now half-open for good, like a
// NAT or load balancer that lost the flows' state and silently drops their
// packets: bytes from either side are read and discarded, nothing is closed.
// Connections made afterwards are not affected.
func (p *Proxy) BlackholeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.blackholed.Store(true)
	}
}

// SetLatency delays every chunk forwarded, in both directions, by d.
// Zero disables it.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// ResetAfterRequest arms the proxy for the next n responses: requests are
// forwarded as usual, but when response bytes arrive from the upstream
// while armed, they are not forwarded; the client connection is reset and
// the upstream closed instead, and the arm count decrements. This models
// "the server ran it, the client cannot know". n <= 0 disarms.
//
// The proxy does not parse HTTP, so "a response" means the next chunk read
// from any upstream; arm between requests, not during a response.
func (p *Proxy) ResetAfterRequest(n int) {
	p.armMu.Lock()
	p.armed = n
	p.armMu.Unlock()
}

func (p *Proxy) takeArm() bool {
	p.armMu.Lock()
	defer p.armMu.Unlock()
	if p.armed <= 0 {
		return false
	}
	p.armed--
	return true
}

// SetRefuse(true) closes the listener and resets every open connection, so
// new dials get ECONNREFUSED from the kernel. SetRefuse(false) listens again
// on the same address, retrying for about a second if the port is
// momentarily busy. It returns an error if listening again fails or the
// proxy is closed.
func (p *Proxy) SetRefuse(on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return net.ErrClosed
	}
	if on {
		if p.ln != nil {
			p.ln.Close()
			p.ln = nil
		}
		for c := range p.conns {
			c.kill(true)
		}
		return nil
	}
	if p.ln != nil {
		return nil
	}
	ln, err := listenRetry(p.addr)
	if err != nil {
		return err
	}
	p.ln = ln
	p.wg.Add(1)
	go p.acceptLoop(ln)
	return nil
}

// listenRetry exists because another socket may grab the port for a moment
// between our close and our re-listen; TIME_WAIT is not a problem as Go sets
// SO_REUSEADDR on listeners.
func listenRetry(addr string) (net.Listener, error) {
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, fmt.Errorf("faultproxy: listen again on %s: %w", addr, err)
}

// Clear turns every switchable fault off: close-idle, blackhole, latency and
// reset-after-request, and listens again if refusing. An error from
// listening again is dropped; call SetRefuse(false) to see it.
func (p *Proxy) Clear() {
	p.SetCloseIdle(0)
	p.SetBlackhole(false)
	p.SetLatency(0)
	p.ResetAfterRequest(0)
	_ = p.SetRefuse(false)
}

// SetTap, while on, records every byte the proxy forwards, per connection
// and direction, closed connections included, for Tapped. Bytes are
// recorded as they are handed to the peer's socket, before the peer can
// answer them.
//
// It is how a test tells how many times a request reached a server it
// cannot instrument, and what the server answered to each.
func (p *Proxy) SetTap(on bool) { p.tapping.Store(on) }

// Tap is what one connection carried while tapping: Sent from the client to
// the upstream, Received from the upstream to the client (as far as it was
// forwarded).
type Tap struct{ Sent, Received []byte }

// Tapped returns a copy of what every connection carried while tapping, in
// the order the connections first carried bytes.
func (p *Proxy) Tapped() []Tap {
	p.tapMu.Lock()
	tapped := slices.Clone(p.tapped)
	p.tapMu.Unlock()
	taps := make([]Tap, len(tapped))
	for i, c := range tapped {
		taps[i] = c.tap()
	}
	return taps
}

func (p *Proxy) record(c *conn, b []byte, fromClient bool) {
	if c.record(b, fromClient) {
		p.tapMu.Lock()
		p.tapped = append(p.tapped, c)
		p.tapMu.Unlock()
	}
}

// Accepted returns the number of connections accepted since New.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Open returns the number of connections currently open.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Dials returns the number of DialContext calls since New.
func (p *Proxy) Dials() int64 { return p.dials.Load() }

// DialContext counts a dial attempt, then dials the proxy's own address,
// ignoring addr. Install it as http.Transport.DialContext so connection
// attempts are counted even while the proxy refuses them: the kernel
// produces the ECONNREFUSED, so only the dialer can see the attempt.
func (p *Proxy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	p.dials.Add(1)
	var d net.Dialer
	return d.DialContext(ctx, network, p.addr)
}

func (p *Proxy) acceptLoop(ln net.Listener) {
	defer p.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			// On loopback Accept only fails once ln is closed by Close or
			// SetRefuse(true), so there is nothing worth retrying.
			return
		}
		p.accepted.Add(1)
		c := &conn{client: nc.(*net.TCPConn)}
		c.lastActive.Store(p.now())
		p.mu.Lock()
		if p.ln != ln {
			// Refuse or Close ran between Accept and here; the connection
			// must not outlive the listener that accepted it.
			p.mu.Unlock()
			c.kill(true)
			continue
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// reapIdle runs for the proxy's lifetime so SetCloseIdle never has to start
// or stop goroutines.
func (p *Proxy) reapIdle() {
	defer p.wg.Done()
	for {
		d := time.Duration(p.closeIdle.Load())
		var tick <-chan time.Time
		if d > 0 {
			tick = time.After(max(d/4, time.Millisecond))
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.idleChanged:
		case <-tick:
			p.closeIdleConns(d)
		}
	}
}

func (p *Proxy) closeIdleConns(d time.Duration) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if now-c.lastActive.Load() > int64(d) && !c.isDropped() {
			c.kill(false)
		}
	}
}

// now is monotonic, unlike a stored wall-clock time.
func (p *Proxy) now() int64 { return int64(time.Since(p.start)) }
