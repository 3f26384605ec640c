package faultproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo is a raw TCP upstream that echoes bytes and counts what it got.
type echo struct {
	ln       net.Listener
	received atomic.Int64
	open     atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	closed   bool
	conns    []net.Conn
}

func newEcho(t *testing.T) *echo {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echo{ln: ln}
	e.wg.Add(1)
	go e.accept()
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		e.closed = true
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *echo) accept() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			c.Close()
			return
		}
		e.conns = append(e.conns, c)
		e.open.Add(1)
		e.wg.Add(1)
		e.mu.Unlock()
		go func() {
			defer e.wg.Done()
			defer e.open.Add(-1)
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					e.received.Add(int64(n))
					c.Write(buf[:n])
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

// readErr reads once with a deadline and returns the error.
func readErr(c net.Conn, d time.Duration) error {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 400 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// httpUpstream serves "ok <path>" and counts handler runs.
func httpUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var runs atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "ok %s", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, &runs
}

func httpClient(t *testing.T, p *Proxy, keepAlive bool) *http.Client {
	tr := &http.Transport{DialContext: p.DialContext, DisableKeepAlives: !keepAlive}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func post(c *http.Client, url string) (string, error) {
	// POST is not replayable, so http.Transport surfaces the error instead of
	// silently retrying on a fresh connection.
	resp, err := c.Post(url, "text/plain", strings.NewReader("x"))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func mustPost(t *testing.T, c *http.Client, url string) {
	t.Helper()
	body, err := post(c, url)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	if want := "ok /x"; body != want {
		t.Fatalf("body = %q, want %q", body, want)
	}
}

func TestForwardHTTP(t *testing.T) {
	srv, runs := httpUpstream(t)
	p := newProxy(t, srv.Listener.Addr().String())
	c := httpClient(t, p, true)
	for range 3 {
		mustPost(t, c, p.URL("/x"))
	}
	if runs.Load() != 3 {
		t.Errorf("handler runs = %d, want 3", runs.Load())
	}
	if p.Dials() != 1 || p.Accepted() != 1 {
		t.Errorf("Dials, Accepted = %d, %d; want 1, 1 (keep-alive reuse)", p.Dials(), p.Accepted())
	}
}

// The tap records both directions of every connection, the closed ones
// included, and only while it is on.
func TestTapRecordsBothDirections(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	untapped := dial(t, p.Addr())
	roundTrip(t, untapped, "before the tap")
	p.SetTap(true)
	for i := range 2 {
		c := dial(t, p.Addr())
		roundTrip(t, c, fmt.Sprint("closed ", i))
		c.Close()
	}
	roundTrip(t, untapped, "on the old connection")
	p.SetTap(false)
	roundTrip(t, untapped, " after the tap")
	var got []string
	for _, tap := range p.Tapped() {
		if !bytes.Equal(tap.Sent, tap.Received) {
			t.Errorf("sent %q, received %q: the echo returns what it gets", tap.Sent, tap.Received)
		}
		got = append(got, string(tap.Sent))
	}
	want := []string{"closed 0", "closed 1", "on the old connection"}
	if !slices.Equal(got, want) {
		t.Errorf("tapped %q, want %q", got, want)
	}
}

func TestCounters(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	var conns []net.Conn
	for i := range 3 {
		c := dial(t, p.Addr())
		roundTrip(t, c, fmt.Sprint("hello", i))
		conns = append(conns, c)
	}
	if p.Accepted() != 3 || p.Open() != 3 {
		t.Fatalf("Accepted, Open = %d, %d; want 3, 3", p.Accepted(), p.Open())
	}
	conns[0].Close()
	conns[1].Close()
	waitFor(t, "Open() == 1", func() bool { return p.Open() == 1 })
	waitFor(t, "upstream conns to close", func() bool { return e.open.Load() == 1 })
	if p.Accepted() != 3 {
		t.Errorf("Accepted = %d, want 3", p.Accepted())
	}
}

func TestResetAll(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	c := dial(t, p.Addr())
	roundTrip(t, c, "ping")
	p.ResetAll()
	if err := readErr(c, 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after ResetAll: %v, want ECONNRESET", err)
	}
	waitFor(t, "Open() == 0", func() bool { return p.Open() == 0 })
	waitFor(t, "upstream closed", func() bool { return e.open.Load() == 0 })
}

func TestDropAll(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	c := dial(t, p.Addr())
	roundTrip(t, c, "ping")
	p.DropAll()
	waitFor(t, "upstream closed", func() bool { return e.open.Load() == 0 })
	// The client must not be told: no FIN, no RST, just silence.
	if err := readErr(c, 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read before sending: %v, want a timeout", err)
	}
	if p.Open() != 1 {
		t.Fatalf("Open = %d, want 1 (client side still open)", p.Open())
	}
	if _, err := c.Write([]byte("again")); err != nil {
		t.Fatalf("write after drop: %v (the first write must still succeed)", err)
	}
	if err := readErr(c, 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after drop: %v, want ECONNRESET", err)
	}
	waitFor(t, "Open() == 0", func() bool { return p.Open() == 0 })
}

func TestDropAllHTTP(t *testing.T) {
	srv, runs := httpUpstream(t)
	p := newProxy(t, srv.Listener.Addr().String())
	c := httpClient(t, p, true)
	mustPost(t, c, p.URL("/x"))
	p.DropAll()
	if _, err := post(c, p.URL("/x")); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("POST on dropped conn: %v, want ECONNRESET", err)
	}
	if p.Dials() != 1 {
		t.Fatalf("Dials = %d, want 1: the failed POST must have reused the dropped conn", p.Dials())
	}
	mustPost(t, c, p.URL("/x"))
	if runs.Load() != 2 {
		t.Errorf("handler runs = %d, want 2", runs.Load())
	}
}

func TestCloseIdle(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	idle, busy := dial(t, p.Addr()), dial(t, p.Addr())
	roundTrip(t, idle, "a")
	roundTrip(t, busy, "b")
	p.SetCloseIdle(100 * time.Millisecond)
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		roundTrip(t, busy, "b")
		time.Sleep(10 * time.Millisecond)
	}
	if err := readErr(idle, 2*time.Second); err != io.EOF {
		t.Fatalf("idle conn read: %v, want EOF", err)
	}
	roundTrip(t, busy, "still here")
	if p.Open() != 1 {
		t.Errorf("Open = %d, want 1", p.Open())
	}
}

func TestBlackhole(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	c := dial(t, p.Addr())
	roundTrip(t, c, "a")
	p.SetBlackhole(true)
	if _, err := c.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	if err := readErr(c, 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while blackholed: %v, want a timeout", err)
	}
	if got := e.received.Load(); got != 1 {
		t.Fatalf("upstream received %d bytes, want 1 (nothing while blackholed)", got)
	}
	p.SetBlackhole(false)
	roundTrip(t, c, "back") // would read "lost" if discarded bytes leaked
	if got := e.received.Load(); got != 5 {
		t.Errorf("upstream received %d bytes, want 5", got)
	}
}

func TestBlackholeAllSparesNewConnections(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	old := dial(t, p.Addr())
	roundTrip(t, old, "a")
	p.BlackholeAll()
	if _, err := old.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	if err := readErr(old, 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a half-open conn: %v, want a timeout", err)
	}
	roundTrip(t, dial(t, p.Addr()), "new") // a new connection is unaffected
	if got := e.received.Load(); got != 4 {
		t.Errorf("upstream received %d bytes, want 4 (none from the half-open conn)", got)
	}
}

func TestRefuse(t *testing.T) {
	srv, _ := httpUpstream(t)
	p := newProxy(t, srv.Listener.Addr().String())
	c := httpClient(t, p, false)
	addr := p.Addr()
	mustPost(t, c, p.URL("/x"))
	open := dial(t, addr)
	// Open() == 1 can still be the POST's connection on its way out; the
	// dialled one must be accepted before the listener closes, or the
	// kernel resets it unaccepted and Accepted is one short.
	waitFor(t, "the dialled connection accepted", func() bool { return p.Accepted() == 2 })

	if err := p.SetRefuse(true); err != nil {
		t.Fatal(err)
	}
	if err := readErr(open, 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("open conn after SetRefuse(true): %v, want ECONNRESET", err)
	}
	if _, err := post(c, p.URL("/x")); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("POST while refusing: %v, want ECONNREFUSED", err)
	}
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while refusing: %v, want ECONNREFUSED", err)
	}
	if p.Dials() != 2 {
		t.Fatalf("Dials = %d, want 2 (refused attempt counted)", p.Dials())
	}

	if err := p.SetRefuse(false); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("Addr changed from %s to %s", addr, p.Addr())
	}
	mustPost(t, c, p.URL("/x"))
	if p.Dials() != 3 || p.Accepted() != 3 {
		t.Errorf("Dials, Accepted = %d, %d; want 3, 3", p.Dials(), p.Accepted())
	}
}

func TestLatency(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	c := dial(t, p.Addr())
	roundTrip(t, c, "warm")
	const d = 50 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	roundTrip(t, c, "slow")
	if took := time.Since(start); took < 2*d {
		t.Errorf("round trip took %v, want >= %v (latency both ways)", took, 2*d)
	}
}

func TestResetAfterRequest(t *testing.T) {
	srv, runs := httpUpstream(t)
	p := newProxy(t, srv.Listener.Addr().String())
	c := httpClient(t, p, false)
	p.ResetAfterRequest(1)
	_, err := post(c, p.URL("/x"))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("POST while armed: %v, want ECONNRESET", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("handler runs = %d, want 1 (server ran it)", runs.Load())
	}
	mustPost(t, c, p.URL("/x"))
	if runs.Load() != 2 {
		t.Errorf("handler runs = %d, want 2", runs.Load())
	}
}

func TestClear(t *testing.T) {
	e := newEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	p.SetBlackhole(true)
	p.SetLatency(time.Millisecond)
	p.SetCloseIdle(time.Millisecond)
	p.ResetAfterRequest(5)
	if err := p.SetRefuse(true); err != nil {
		t.Fatal(err)
	}
	p.Clear()
	c := dial(t, p.Addr())
	roundTrip(t, c, "clear")
	time.Sleep(20 * time.Millisecond) // longer than the cleared idle limit
	roundTrip(t, c, "still")
}

func TestUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Close only after New, so the proxy cannot be given the same port.
	p := newProxy(t, ln.Addr().String())
	ln.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c.Close()
		err = readErr(c, 2*time.Second)
	}
	// The reset can arrive before Go's non-blocking connect checks SO_ERROR,
	// in which case the dial itself fails with ECONNRESET.
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("dial+read with upstream down: %v, want ECONNRESET", err)
	}
}

func TestClose(t *testing.T) {
	e := newEcho(t)
	before := goleak.IgnoreCurrent()
	p := newProxy(t, e.ln.Addr().String())
	p.SetCloseIdle(time.Hour)
	p.SetLatency(time.Hour) // a sleeping pipe must not delay Close
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "upstream conn", func() bool { return e.open.Load() == 1 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.Open() != 0 {
		t.Errorf("Open = %d after Close", p.Open())
	}
	// EOF, or ECONNRESET if "x" was still unread in the proxy's socket.
	if err := readErr(c, 2*time.Second); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("client read after Close: %v, want EOF or ECONNRESET", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := p.SetRefuse(false); err == nil {
		t.Error("SetRefuse(false) after Close succeeded")
	}
	if _, err := net.Dial("tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after Close: %v, want ECONNREFUSED", err)
	}
	// The echo goroutine for the upstream side exits once the proxy closed it.
	goleak.VerifyNone(t, before)
}
