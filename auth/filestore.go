package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/atomicfile"
	"github.com/resilientmcp/resilientmcp/internal/filelock"
)

// FileStore keeps each grant in a file of one directory, shared by every
// process of the machine that opens the same directory: an agent
// restarted finds its registration and tokens there, and processes
// running side by side renew once between them.
//
// Each key has two files, named by Key.ID (nothing of the key, token or
// client shows in a name): <id>.json, the grant, 0600, replaced whole by
// an atomic rename so that a reader never sees half a write; and
// <id>.lock, locked with flock(2) while a renewal runs. The kernel
// releases a lock whose process dies, so a killed holder never blocks the
// others. The lock is internal/filelock's: flock(2) on Unix, a handle
// opened without sharing on Windows, and a wait that ends with its
// context (a blocking flock call cannot be interrupted). A network file
// system may not honour flock: use it on a local disk.
//
// A FileStore is safe for concurrent use by any number of goroutines and
// processes.
type FileStore struct {
	dir string
}

// lockPoll is how often a waiter tries a held lock again.
const lockPoll = 5 * time.Millisecond

// NewFileStore returns the FileStore in dir, creating it (0700) if need
// be.
func NewFileStore(dir string) (Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: file store: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

func (s *FileStore) path(key Key, ext string) string {
	return filepath.Join(s.dir, key.ID()+ext)
}

// Load reads the grant stored under key; no file is no grant.
func (s *FileStore) Load(ctx context.Context, key Key) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	raw, err := os.ReadFile(s.path(key, ".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Grant{}, nil
	}
	if err != nil {
		return Grant{}, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	var g Grant
	if err := json.Unmarshal(raw, &g); err != nil {
		// Not ours or damaged: say where, never what it holds.
		return Grant{}, fmt.Errorf("%w: %s is not a stored grant", ErrStoreUnavailable, s.path(key, ".json"))
	}
	return g, nil
}

// Update runs fn holding key's file lock and writes what it returns.
func (s *FileStore) Update(ctx context.Context, key Key, fn UpdateFunc) (Grant, error) {
	l, err := filelock.Acquire(ctx, s.path(key, ".lock"), lockPoll)
	if err != nil {
		return Grant{}, fmt.Errorf("%w: waiting for the lock: %w", ErrStoreUnavailable, err)
	}
	defer l.Unlock()
	return update(ctx, key, s, fn, s.write)
}

// write replaces the grant file with g if the stored version is
// g.Version-1 (under the lock nobody else writes; the check costs one
// read).
func (s *FileStore) write(ctx context.Context, key Key, g Grant) error {
	cur, err := s.Load(ctx, key)
	if err != nil {
		return err
	}
	if cur.Version != g.Version-1 {
		return ErrConflict
	}
	raw, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.dir, key.ID()+".json", raw); err != nil {
		return fmt.Errorf("%w: writing the grant: %w", ErrStoreUnavailable, err)
	}
	return nil
}
