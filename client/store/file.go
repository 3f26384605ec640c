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

	"github.com/resilientmcp/resilientmcp/internal/atomicfile"
)

// fileStore keeps each record of one kind in a file of one directory,
// <prefix><hex SHA-256 of its key>.json, written whole by an atomic rename:
// the shape the file task store and the file listing store share (their
// interfaces differ only in the record). Safe for concurrent use by any
// number of goroutines and processes of the machine.
type fileStore[T any] struct {
	dir, prefix string
	what        string         // "task store", for errors
	key         func(T) string // a record's key; "" is no record
}

func newFileStore[T any](dir, prefix, what string, key func(T) string) (*fileStore[T], error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("resilientmcp: %s: %w", what, err)
	}
	return &fileStore[T]{dir: dir, prefix: prefix, what: what, key: key}, nil
}

func (s *fileStore[T]) name(key string) string {
	sum := sha256.Sum256([]byte(key))
	return s.prefix + hex.EncodeToString(sum[:]) + ".json"
}

// Put writes v under its key, replacing what was there.
func (s *fileStore[T]) Put(ctx context.Context, v T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.dir, s.name(s.key(v)), raw); err != nil {
		return fmt.Errorf("resilientmcp: %s: writing %s: %w", s.what, s.key(v), err)
	}
	return nil
}

// Delete removes the record under key; one that is not there is no error.
func (s *fileStore[T]) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(s.dir, s.name(key)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resilientmcp: %s: removing %s: %w", s.what, key, err)
	}
	atomicfile.SyncDir(s.dir)
	return nil
}

// List returns every record of the directory, in no particular order.
func (s *fileStore[T]) List(ctx context.Context) ([]T, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("resilientmcp: %s: %w", s.what, err)
	}
	var out []T
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, s.prefix) || !strings.HasSuffix(n, ".json") {
			continue // another store's, or a write under way (.tmp)
		}
		raw, err := os.ReadFile(filepath.Join(s.dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("resilientmcp: %s: %w", s.what, err)
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil || s.key(v) == "" {
			return nil, fmt.Errorf("resilientmcp: %s: %s is not a record of it", s.what, filepath.Join(s.dir, n))
		}
		out = append(out, v)
	}
	return out, nil
}
