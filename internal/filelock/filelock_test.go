package filelock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// A second holder waits while the first holds the lock, and gets it once
// the first unlocks; flock's locks belong to open files, so two holders
// in one process exclude each other as two processes do.
func TestSecondHolderWaitsForTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock")
	first, err := Acquire(t.Context(), path, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		second, err := Acquire(t.Context(), path, time.Millisecond)
		if err == nil {
			err = second.Unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second holder got the lock while the first held it (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second holder never got the lock after the first unlocked")
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock")
	first, err := Acquire(t.Context(), path, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if l, err := Acquire(ctx, path, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		if l != nil {
			l.Unlock()
		}
		t.Fatalf("Acquire on a held lock = %v, want context.DeadlineExceeded", err)
	}
}
