package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/atomicfile"
)

// StoredListing is the last good answer to a listing or a read, as a
// ListingStore keeps it. A plain value.
type StoredListing struct {
	// Key identifies the answer among every client's: the hex SHA-256 of
	// its endpoint, method, cursor or URI, and for a private answer the
	// fingerprint of the credential it was fetched with.
	Key      string `json:"key"`
	Endpoint string `json:"endpoint"` // the MCP endpoint that answered
	Method   string `json:"method"`   // "tools/list", "resources/read", ...
	Page     bool   `json:"page,omitempty"`
	// Arg is the cursor the listing started from, or the read's URI (and
	// its arguments as JSON, after a NUL).
	Arg string `json:"arg,omitempty"`
	// Principal is the fingerprint of the credential a private answer was
	// fetched with (never the credential), "" for a public one.
	Principal string          `json:"principal,omitempty"`
	Server    string          `json:"server"`  // the server's name and version when it answered
	Fetched   time.Time       `json:"fetched"` // when it answered (within a minute: see WithListingStore)
	TTLMs     *int64          `json:"ttlMs,omitempty"`
	Result    json.RawMessage `json:"result"` // the result, as JSON
}

// ListingStore keeps the last good answers to listings and reads
// (WithListingStore), so that an agent restarted while the server is away
// can serve them stale. It has the TaskStore's shape: the client writes an
// answer when the server gives it (an unchanged one at most once a minute),
// and reads the whole store once, the first time it wants a stale answer
// that its memory does not have.
//
// Implementations must be safe for concurrent use; a store shared by
// several processes says so. The client calls them bounded in time; an
// error is logged and the call goes on (the answer in hand is returned;
// only its survival of a restart is lost).
type ListingStore interface {
	// Put writes l under l.Key, replacing what was there.
	Put(ctx context.Context, l StoredListing) error
	// Delete removes the answer under key; deleting one that is not there
	// is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every answer stored, in no particular order.
	List(ctx context.Context) ([]StoredListing, error)
}

// storeKey is StoredListing.Key.
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
	store := c.opts.listings.store
	if store == nil {
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
	sl := StoredListing{
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
	pending map[string]StoredListing
	running bool // a goroutine drains pending
}

func (w *storeWriter) put(c *ResilientClient, l StoredListing) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[string]StoredListing{}
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
		var next StoredListing
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
func (w *storeWriter) superseded(c *ResilientClient, l StoredListing) bool {
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

// fileListingStore keeps each answer in a file of one directory; see
// NewFileListingStore.
type fileListingStore struct{ dir string }

// fileListingPrefix names the store's files: the directory may be shared
// with the file task store and auth's FileStore.
const fileListingPrefix = "listing-"

// NewFileListingStore returns a ListingStore in dir, created (0700) if
// need be: one machine, surviving restarts of the agent. Each answer is a
// file listing-<key>.json, 0600, written whole by an atomic rename (as the
// file task store writes tasks), so that a process killed mid-write leaves
// the old answer or the new one. It is safe for concurrent use by any
// number of goroutines and processes of the machine: two writing the same
// answer leave one of them whole.
func NewFileListingStore(dir string) (ListingStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("resilientmcp: listing store: %w", err)
	}
	return &fileListingStore{dir: dir}, nil
}

func (s *fileListingStore) name(key string) string {
	sum := sha256.Sum256([]byte(key))
	return fileListingPrefix + hex.EncodeToString(sum[:]) + ".json"
}

func (s *fileListingStore) Put(ctx context.Context, l StoredListing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.dir, s.name(l.Key), raw); err != nil {
		return fmt.Errorf("resilientmcp: listing store: writing %s: %w", l.Method, err)
	}
	return nil
}

func (s *fileListingStore) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(s.dir, s.name(key)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resilientmcp: listing store: %w", err)
	}
	atomicfile.SyncDir(s.dir)
	return nil
}

func (s *fileListingStore) List(ctx context.Context) ([]StoredListing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("resilientmcp: listing store: %w", err)
	}
	var out []StoredListing
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, fileListingPrefix) || !strings.HasSuffix(n, ".json") {
			continue // another store's, or a write under way (.tmp)
		}
		raw, err := os.ReadFile(filepath.Join(s.dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("resilientmcp: listing store: %w", err)
		}
		var l StoredListing
		if err := json.Unmarshal(raw, &l); err != nil || l.Key == "" {
			return nil, fmt.Errorf("resilientmcp: listing store: %s is not a stored listing", filepath.Join(s.dir, n))
		}
		out = append(out, l)
	}
	return out, nil
}
