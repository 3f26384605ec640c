package listings

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/resilientmcp/resilientmcp/client/store"
)

// storeKey is store.StoredListing.Key.
func storeKey(endpoint string, k key, principal string) string {
	h := sha256.New()
	for _, s := range []string{endpoint, k.method, fmt.Sprint(k.page), k.arg, principal} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// putListing writes a fresh answer to the store, if there is one and the
// answer changed or was last written a while ago: in the background
// (storeWriter), so that a slow store never holds the answer in hand.
func (l *Cache) putListing(k key, e *entry) {
	if l.writer == nil {
		return // no store
	}
	raw, err := json.Marshal(e.value)
	if err != nil {
		return
	}
	sum := sha256.Sum256(raw)
	l.mu.Lock()
	due := sum != e.putHash || e.fetched.Sub(e.putAt) >= listingStoreRefresh
	if due {
		e.putHash, e.putAt = sum, e.fetched
	}
	hasTTL, ttl := e.hasTTL, e.ttl // a resources/updated may end them meanwhile
	l.mu.Unlock()
	if !due {
		return
	}
	endpoint := l.host.Endpoint()
	sl := store.StoredListing{
		Key: storeKey(endpoint, k, e.principal), Endpoint: endpoint, Method: k.method, Page: k.page, Arg: k.arg,
		Principal: e.principal, Server: e.server, Fetched: e.fetched, Result: raw,
	}
	if hasTTL {
		ms := ttl.Milliseconds()
		sl.TTLMs = &ms
	}
	l.writer.put(l, sl)
}

// storeWriter writes answers to the listing store one at a time, the
// newest of each key: a write never overtakes a newer one of the same
// answer, and a slow store costs one goroutine, not a caller's time. Close
// waits for the writes queued before it (each bounded by
// listingStoreTimeout, and not cancelled by Close: an agent that lists and
// exits keeps what it listed). Safe for concurrent use.
type storeWriter struct {
	mu      sync.Mutex // before the lock of Host.StartBackground (put checks closed under it), else a leaf
	pending map[string]store.StoredListing
	running bool // a goroutine drains pending
}

func (w *storeWriter) put(l *Cache, sl store.StoredListing) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[string]store.StoredListing{}
	}
	w.pending[sl.Key] = sl
	if w.running {
		return
	}
	// Close waits for the background work started before it; none may
	// start after (Host.StartBackground fails once it is closed).
	if l.host.StartBackground() != nil {
		return
	}
	w.running = true
	go w.drain(l)
}

func (w *storeWriter) drain(l *Cache) {
	defer l.host.EndBackground()
	st := l.host.Store()
	for {
		w.mu.Lock()
		var next store.StoredListing
		found := false
		for k, sl := range w.pending {
			next, found = sl, true
			delete(w.pending, k)
			break
		}
		if !found {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		// An answer of a server the client has since found replaced by
		// another is not written: the store was, or will be, rid of that
		// server's answers (readListingStore), and a write queued before
		// the change must not bring one back; nor one written while the
		// change was seen, which is deleted again.
		if w.superseded(l, next) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), listingStoreTimeout)
		err := st.Put(ctx, next)
		if err == nil && w.superseded(l, next) {
			err = st.Delete(ctx, next.Key)
		}
		cancel()
		if err != nil {
			l.host.Log().Warn("could not write a listing to the listing store", "method", next.Method, "err", err)
		}
	}
}

// superseded: sl is the answer of a server the client has since found
// replaced by another.
func (w *storeWriter) superseded(l *Cache, sl store.StoredListing) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return sl.Server != "" && l.listings.server != "" && sl.Server != l.listings.server
}

// readListingStore reads the store once, the first time a stale answer is
// wanted: the answers a previous process left that the memory lacks.
func (l *Cache) readListingStore(ctx context.Context) {
	st := l.host.Store()
	if st == nil {
		return
	}
	l.mu.Lock()
	done := l.listings.storeRead
	l.listings.storeRead = true
	l.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listingStoreTimeout)
	defer cancel()
	all, err := st.List(ctx)
	if err != nil {
		l.host.Log().Warn("could not read the listing store", "err", err)
		return
	}
	principal := l.principal()
	endpoint := l.host.Endpoint()
	var another []string // answers of another server than the one this process knows
	l.mu.Lock()
	ls := &l.listings
	for _, s := range all {
		if s.Endpoint != endpoint {
			continue
		}
		if ls.server != "" && s.Server != "" && s.Server != ls.server {
			another = append(another, s.Key)
			continue
		}
		if s.Principal != "" && s.Principal != principal {
			continue
		}
		k := key{method: s.Method, page: s.Page, arg: s.Arg}
		if ls.entryFor(k, s.Principal) != nil {
			continue // this process has its own
		}
		e := &entry{raw: s.Result, fetched: s.Fetched, principal: s.Principal, server: s.Server, fromStore: true, hasTTL: s.TTLMs != nil}
		ls.keep(k, e)
	}
	l.mu.Unlock()
	// Never to be served again: the server they came from is gone.
	for _, k := range another {
		if err := st.Delete(ctx, k); err != nil {
			l.host.Log().Warn("could not remove another server's listing from the listing store", "err", err)
			return
		}
	}
}
