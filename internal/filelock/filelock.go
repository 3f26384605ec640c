// Package filelock is an exclusive lock on a file, shared by the
// processes of one machine and released by the kernel when its holder
// dies, with a wait that ends with its context.
//
// It is written here, on the standard library's syscall package, rather
// than taken from github.com/gofrs/flock, so that a program importing
// client does not carry two modules (flock and golang.org/x/sys) for the
// one store that locks files (auth.FileStore).
package filelock

import (
	"context"
	"errors"
	"os"
	"time"
)

// ErrUnsupported is returned on a platform without a file lock.
var ErrUnsupported = errors.New("filelock: no file lock on this platform")

// Lock holds path's lock until Unlock. It is not safe for concurrent use;
// each holder opens its own.
type Lock struct {
	f *os.File
}

// Acquire waits for path's lock, trying again every poll, until it holds
// it or ctx ends. The file is created 0600 if need be and is never
// removed: removing it would let two holders lock two different files.
func Acquire(ctx context.Context, path string, poll time.Duration) (*Lock, error) {
	for {
		f, err := tryLock(path)
		if err == nil {
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, errHeld) {
			return nil, err
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// Unlock releases the lock (closing the file releases it).
func (l *Lock) Unlock() error { return l.f.Close() }

// errHeld says another holder has the lock now.
var errHeld = errors.New("filelock: held")
