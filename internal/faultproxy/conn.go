package faultproxy

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one proxied connection. Faults act on it from other goroutines
// while its two pipes run, hence the mutex.
type conn struct {
	client     *net.TCPConn
	lastActive atomic.Int64 // Proxy.now() of the last byte in either direction
	blackholed atomic.Bool  // BlackholeAll caught it: forward nothing, ever

	mu       sync.Mutex
	upstream *net.TCPConn // nil until the upstream dial completes
	dead     bool
	dropped  bool
	sent     []byte // what was forwarded upstream while tapping (SetTap)
	received []byte // what was forwarded to the client while tapping
	tapped   bool
}

// record appends b to what the connection forwarded one way; it reports
// whether this was the first record, so the proxy lists the connection once.
func (c *conn) record(b []byte, fromClient bool) (first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fromClient {
		c.sent = append(c.sent, b...)
	} else {
		c.received = append(c.received, b...)
	}
	first = !c.tapped
	c.tapped = true
	return first
}

func (c *conn) tap() Tap {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Tap{Sent: slices.Clone(c.sent), Received: slices.Clone(c.received)}
}

// kill closes both sides; with rst the peers get a reset instead of a FIN.
// Repeated calls are harmless.
func (c *conn) kill(rst bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	closeTCP(c.client, rst)
	if c.upstream != nil {
		closeTCP(c.upstream, rst)
	}
}

func closeTCP(tc *net.TCPConn, rst bool) {
	if rst {
		tc.SetLinger(0) // makes Close send RST instead of FIN
	}
	tc.Close()
}

// drop forgets the flow upstream only; the client pipe resets the client
// when it next hears from it.
func (c *conn) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead || c.dropped {
		return
	}
	c.dropped = true
	if c.upstream != nil {
		c.upstream.Close()
	}
}

func (c *conn) isDropped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// setUpstream applies faults that hit the connection while it was dialing.
// It reports false if the connection is already dead.
func (c *conn) setUpstream(u *net.TCPConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return false
	}
	c.upstream = u
	if c.dropped {
		u.Close()
	}
	return true
}

// serve dials the upstream and runs both pipes until they are done.
func (p *Proxy) serve(c *conn) {
	defer p.wg.Done()
	defer p.forget(c)
	var d net.Dialer
	nc, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// A reset is the closest a proxy gets to passing on the refusal.
		c.kill(true)
		return
	}
	up := nc.(*net.TCPConn)
	if !c.setUpstream(up) {
		up.Close()
		return
	}
	done := make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		p.pipe(c, c.client, up, true)
	}()
	p.pipe(c, up, c.client, false)
	<-done
}

func (p *Proxy) forget(c *conn) {
	c.kill(false)
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, applying the faults to each chunk.
func (p *Proxy) pipe(c *conn, src, dst *net.TCPConn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			err = p.forward(c, dst, buf[:n], fromClient)
		}
		if err != nil {
			p.finish(c, dst, err, fromClient)
			return
		}
	}
}

// errStop ends a pipe whose connection a fault has already dealt with.
var errStop = errors.New("faultproxy: pipe stopped")

func (p *Proxy) forward(c *conn, dst *net.TCPConn, b []byte, fromClient bool) error {
	c.lastActive.Store(p.now())
	// Blackhole wins over every other fault because it promises to close
	// nothing.
	if p.blackhole.Load() || c.blackholed.Load() {
		return nil
	}
	// Response bytes prove the server ran the request; resetting now means
	// the client cannot know that it did.
	if !fromClient && p.takeArm() {
		c.kill(true)
		return errStop
	}
	if d := time.Duration(p.latency.Load()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.ctx.Done():
			return errStop // Close is already closing the connection
		}
	}
	// Recorded before the write: once written, the peer may act on the
	// bytes, and whoever reads the tap then must find them there. A write
	// that fails leaves bytes recorded that never arrived: the tap bounds
	// what reached the peer from above.
	if p.tapping.Load() {
		p.record(c, b, fromClient)
	}
	_, err := dst.Write(b)
	return err
}

// finish decides what the end of one direction means for the connection.
func (p *Proxy) finish(c *conn, dst *net.TCPConn, err error, fromClient bool) {
	switch {
	case err == errStop:
	case c.isDropped():
		// The upstream was closed on purpose, so the client must not hear
		// of it until the client pipe ends: the client sent bytes (writing
		// them to the closed upstream failed) or closed. A forgotten flow
		// answers either with RST.
		if fromClient {
			c.kill(true)
		}
	case errors.Is(err, io.EOF):
		// Pass the half-close on and let the other direction finish.
		dst.CloseWrite()
	default:
		c.kill(false)
	}
}
