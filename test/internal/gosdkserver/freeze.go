package gosdkserver

import (
	"net"
	"sync"
)

// gate is what SIGSTOP takes from a process: while closed, the server's
// connections neither hand it what they read nor write what it sends, and
// accepted connections wait before the server sees them. The kernel goes on
// accepting and buffering meanwhile, as it does for a stopped process.
type gate struct {
	mu     sync.Mutex
	closed chan struct{} // non-nil while frozen; closed by open
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// wait returns at once unless the server is frozen, then when it thaws.
func (g *gate) wait() {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

type frozenListener struct {
	net.Listener
	gate *gate
}

func (l *frozenListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	l.gate.wait()
	if err != nil {
		return nil, err
	}
	return &frozenConn{Conn: c, gate: l.gate}, nil
}

type frozenConn struct {
	net.Conn
	gate *gate
}

// Read waits after reading, not before: a read already blocked when the
// freeze begins must not hand over bytes that arrive during it.
func (c *frozenConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.gate.wait()
	return n, err
}

func (c *frozenConn) Write(b []byte) (int, error) {
	c.gate.wait()
	return c.Conn.Write(b)
}
