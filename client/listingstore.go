package client

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
func storeKey(endpoint string, k listingKey, principal string) string {
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
func (c *ResilientClient) putListing(k listingKey, e *listingEntry) {
	if c.opts.listings.store == nil {
		return
	}
	raw, err := json.Marshal(e.value)
	if err != nil {
		return
	}
	sum := sha256.Sum256(raw)
	c.tools.mu.Lock()
	due := sum != e.putHash || e.fetched.Sub(e.putAt) >= listingStoreRefresh
	if due {
		e.putHash, e.putAt = sum, e.fetched
	}
	hasTTL, ttl := e.hasTTL, e.ttl // a resources/updated may end them meanwhile
	c.tools.mu.Unlock()
	if !due {
		return
	}
	sl := store.StoredListing{
		Key: storeKey(c.endpoint, k, e.principal), Endpoint: c.endpoint, Method: k.method, Page: k.page, Arg: k.arg,
		Principal: e.principal, Server: e.server, Fetched: e.fetched, Result: raw,
	}
	if hasTTL {
		ms := ttl.Milliseconds()
		sl.TTLMs = &ms
	}
	c.storeWriter.put(c, sl)
}

// storeWriter writes answers to the listing store one at a time, the
// newest of each key: a write never overtakes a newer one of the same
// answer, and a slow store costs one goroutine, not a caller's time. Close
// waits for the writes queued before it (each bounded by
// listingStoreTimeout, and not cancelled by Close: an agent that lists and
// exits keeps what it listed). Safe for concurrent use.
type storeWriter struct {
	mu      sync.Mutex // before toolCache.mu (put checks closed under it), else a leaf
	pending map[string]store.StoredListing
	running bool // a goroutine drains pending
}

func (w *storeWriter) put(c *ResilientClient, l store.StoredListing) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[string]store.StoredListing{}
	}
	w.pending[l.Key] = l
	if w.running {
		return
	}
	// Close waits for the background work started before it; none may
	// start after (it takes toolCache.mu once it has set closed).
	c.tools.mu.Lock()
	closed := c.closed.Load()
	if !closed {
		c.background.Add(1)
	}
	c.tools.mu.Unlock()
	if closed {
		return
	}
	w.running = true
	go w.drain(c)
}

func (w *storeWriter) drain(c *ResilientClient) {
	defer c.background.Done()
	for {
		w.mu.Lock()
		var next store.StoredListing
		found := false
		for k, l := range w.pending {
			next, found = l, true
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
		if w.superseded(c, next) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), listingStoreTimeout)
		err := c.opts.listings.store.Put(ctx, next)
		if err == nil && w.superseded(c, next) {
			err = c.opts.listings.store.Delete(ctx, next.Key)
		}
		cancel()
		if err != nil {
			c.log.Warn("could not write a listing to the listing store", "method", next.Method, "err", err)
		}
	}
}

// superseded: l is the answer of a server the client has since found
// replaced by another.
func (w *storeWriter) superseded(c *ResilientClient, l store.StoredListing) bool {
	c.tools.mu.Lock()
	defer c.tools.mu.Unlock()
	return l.Server != "" && c.tools.listings.server != "" && l.Server != c.tools.listings.server
}

// readListingStore reads the store once, the first time a stale answer is
// wanted: the answers a previous process left that the memory lacks.
func (c *ResilientClient) readListingStore(ctx context.Context) {
	store := c.opts.listings.store
	if store == nil {
		return
	}
	c.tools.mu.Lock()
	done := c.tools.listings.storeRead
	c.tools.listings.storeRead = true
	c.tools.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listingStoreTimeout)
	defer cancel()
	all, err := store.List(ctx)
	if err != nil {
		c.log.Warn("could not read the listing store", "err", err)
		return
	}
	principal := c.principal()
	var another []string // answers of another server than the one this process knows
	c.tools.mu.Lock()
	l := &c.tools.listings
	for _, s := range all {
		if s.Endpoint != c.endpoint {
			continue
		}
		if l.server != "" && s.Server != "" && s.Server != l.server {
			another = append(another, s.Key)
			continue
		}
		if s.Principal != "" && s.Principal != principal {
			continue
		}
		k := listingKey{method: s.Method, page: s.Page, arg: s.Arg}
		if l.entryFor(k, s.Principal) != nil {
			continue // this process has its own
		}
		e := &listingEntry{raw: s.Result, fetched: s.Fetched, principal: s.Principal, server: s.Server, fromStore: true, hasTTL: s.TTLMs != nil}
		l.keep(k, e)
	}
	c.tools.mu.Unlock()
	// Never to be served again: the server they came from is gone.
	for _, key := range another {
		if err := store.Delete(ctx, key); err != nil {
			c.log.Warn("could not remove another server's listing from the listing store", "err", err)
			return
		}
	}
}
