package wire

import (
	"net/http"
	"sync"
	"time"
)

// Renewable is a net/http Transport that can be exchanged for a fresh copy
// of itself, for a client that goes idle to keep nothing of its
// connections: not the idle connection (a socket, 8 KB of buffers, two
// goroutines), and not the bookkeeping an http.Transport keeps for good once
// it has dialled (its maps of waiting requests and of cancel functions,
// about 1.5 KB). Renew drops both; the next request dials on a copy.
//
// The copy is made by the request that needs it, not by Renew: an idle
// client keeps no Transport at all, only the function that makes one,
// which for TunedClient's clones a pattern shared by the clients of one
// configuration (an unused Transport made at each renewal was 0.44 KB of
// an idle client, BenchmarkIdleClients).
//
// A Renewable is safe for concurrent use.
type Renewable struct {
	// mu: RoundTrip holds it shared while it hands a request to cur, and
	// exclusively to make cur; Renew holds it exclusively while it drops
	// cur, so that no request starts on a Transport whose idle connections
	// were closed (it would park its connection there, out of reach, until
	// IdleConnTimeout). A leaf.
	mu  sync.RWMutex
	cur *http.Transport // nil from Renew until a request needs one; guarded by mu
	// fresh makes a Transport, with no connection and no bookkeeping yet.
	// Set once.
	fresh func() *http.Transport
	h2c   bool // fresh's Transports speak HTTP/2 over plain TCP too; set once
	// markReached: a layer of the user's is above; tell each request's
	// exchange that net/http got it (MarkReached). Set before the first
	// request.
	markReached bool
}

// MarkReached has r record, in the exchange of each request that reaches
// it, that the request reached net/http's Transport, which reports through
// httptrace the connection it takes: the tracker above a layer of the
// user's cannot know it (Record.Traced). Called before r's first request.
func (r *Renewable) MarkReached() { r.markReached = true }

// NewRenewable returns a Renewable whose Transports fresh makes: the
// first at once, each next one for the first request after a Renew.
func NewRenewable(fresh func() *http.Transport) *Renewable {
	t := fresh()
	return &Renewable{cur: t, fresh: fresh, h2c: speaksH2C(t)}
}

// RoundTrip sends req on the current Transport. Only until the response's
// headers: its body is read on the connection it came on, whatever Renew
// does meanwhile. net/http gets no GetBody on a request it may send over
// HTTP/2, so that it never sends one again by itself (resend.go).
func (r *Renewable) RoundTrip(req *http.Request) (*http.Response, error) {
	req = withoutResend(req, r.h2c)
	if r.markReached {
		if ex, ok := req.Context().Value(exchangeKey{}).(*Exchange); ok {
			ex.mu.Lock()
			ex.rec.Traced = true
			ex.mu.Unlock()
		}
	}
	r.mu.RLock()
	// Made here, under the exclusive hold, unless a Renew drops it again
	// before the shared hold is back: a Renew comes after a probe that
	// found no call in flight, seldom twice within one request's start.
	for r.cur == nil {
		r.mu.RUnlock()
		r.make()
		r.mu.RLock()
	}
	defer r.mu.RUnlock()
	return r.cur.RoundTrip(req)
}

// make returns the current Transport, making it if there is none. It
// waits for the exclusive hold only to make one.
func (r *Renewable) make() *http.Transport {
	r.mu.RLock()
	cur := r.cur
	r.mu.RUnlock()
	if cur != nil {
		return cur
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		r.cur = r.fresh()
	}
	return r.cur
}

// CloseIdleConnections closes the current Transport's idle connections.
func (r *Renewable) CloseIdleConnections() {
	r.mu.RLock()
	cur := r.cur
	r.mu.RUnlock()
	if cur != nil {
		cur.CloseIdleConnections()
	}
}

// Renew drops the Transport and closes its idle connections; those still
// in use close when their response ends. The next request is sent on a
// fresh Transport. It does nothing, and reports false, while a
// request is being handed to the Transport: a client renews when it is
// idle, and one that is not has nothing to gain.
func (r *Renewable) Renew() bool {
	if !r.mu.TryLock() {
		return false
	}
	old := r.cur
	r.cur = nil
	r.mu.Unlock()
	if old == nil {
		return true // no request since the last Renew: nothing to drop
	}
	old.CloseIdleConnections()
	// An HTTP/1 connection still in use is closed when its response ends,
	// since the old Transport was told to close idle ones; an HTTP/2
	// connection is not: whatever was busy at Renew stays open in the old
	// Transport until IdleConnTimeout. And it usually is busy: the stream
	// of the request just answered (a probe) is still being cleaned up
	// when its caller is done, as mcp-go cancels a request's context
	// before closing its body, and the body's Close then returns without
	// waiting for the stream to end. So the old Transport is asked again
	// once those streams have ended; a stream open for long (an event
	// stream) keeps its connection until it ends and IdleConnTimeout
	// passes, as before.
	if old.TLSClientConfig != nil || r.h2c {
		time.AfterFunc(retireAfter, old.CloseIdleConnections)
	}
	return true
}

// retireAfter is how long after Renew the old Transport's HTTP/2
// connections are closed if idle by then: the streams that kept them busy
// at Renew end within microseconds of it.
const retireAfter = 100 * time.Millisecond

// Transport is the current Transport, made if there is none, as a request
// would.
func (r *Renewable) Transport() *http.Transport { return r.make() }
