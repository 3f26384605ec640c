package store

import (
	"context"
	"encoding/json"
	"time"
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
	Fetched   time.Time       `json:"fetched"` // when it answered (within a minute: see client.WithListingStore)
	TTLMs     *int64          `json:"ttlMs,omitempty"`
	Result    json.RawMessage `json:"result"` // the result, as JSON
}

// ListingStore keeps the last good answers to listings and reads
// (client.WithListingStore), so that an agent restarted while the server is away
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

// fileListingPrefix names the store's files: the directory may be shared
// with the file task store and auth's FileStore.
const fileListingPrefix = "listing-"

// NewFileListingStore returns a ListingStore in dir, created (0700) if
// need be: one machine, surviving restarts of the agent. Each answer is a
// file listing-<hex SHA-256 of its key>.json, 0600, written whole by an
// atomic rename (as the file task store writes tasks), so that a process
// killed mid-write leaves the old answer or the new one. It is safe for
// concurrent use by any number of goroutines and processes of the
// machine: two writing the same answer leave one of them whole.
func NewFileListingStore(dir string) (ListingStore, error) {
	return newFileStore(dir, fileListingPrefix, "listing store", func(l StoredListing) string { return l.Key })
}
