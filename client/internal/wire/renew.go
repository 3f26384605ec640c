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
// about 1.5 KB). Renew drops both; the next request dials on the copy.
//
// A Renewable is safe for concurrent use.
type Renewable struct {
	// mu: RoundTrip holds it shared while it hands a request to cur, and
	// Renew exclusively while it exchanges cur, so that no request starts
	// on a Transport whose idle connections were closed (it would park its
	// connection there, out of reach, until IdleConnTimeout). A leaf.
	mu  sync.RWMutex
	cur *http.Transport
	h2c bool // cur speaks HTTP/2 over plain TCP too; set once, copied by Clone
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

// NewRenewable returns a Renewable that starts with t.
func NewRenewable(t *http.Transport) *Renewable { return &Renewable{cur: t, h2c: speaksH2C(t)} }

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
	defer r.mu.RUnlock()
	return r.cur.RoundTrip(req)
}

// CloseIdleConnections closes the current Transport's idle connections.
func (r *Renewable) CloseIdleConnections() {
	r.mu.RLock()
	cur := r.cur
	r.mu.RUnlock()
	cur.CloseIdleConnections()
}

// Renew exchanges the Transport for a fresh clone and closes the old one's
// idle connections; those still in use close when their response ends. It
// does nothing, and reports false, while a request is being handed to the
// Transport: a client renews when it is idle, and one that is not has
// nothing to gain.
func (r *Renewable) Renew() bool {
	if !r.mu.TryLock() {
		return false
	}
	old := r.cur
	r.cur = old.Clone()
	r.mu.Unlock()
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

// Transport is the current Transport.
func (r *Renewable) Transport() *http.Transport {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur
}
