package store

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
