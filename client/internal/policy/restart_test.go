package policy

import (
	"errors"
	"io/fs"
	"os/exec"
	"testing"
	"time"
)

func TestRestartsLoopAfterTheLimitAndSpaceTheStarts(t *testing.T) {
	r := Restarts{Limit: 2, Window: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	at := t0
	// The first start and two restarts are made at once.
	for i := range 3 {
		if next := r.Next(at, 0); !next.Equal(at) {
			t.Fatalf("start %d waits until %v; want at once", i, next)
		}
		r.Started(at)
		at = at.Add(time.Second)
	}
	if r.Looping() {
		t.Fatal("looping after 2 restarts with a limit of 2")
	}
	// A third restart within the window is one too many: it waits
	// Window/Limit after the last start, and the steps double up to Window.
	next := r.Next(at, 0)
	if !r.Looping() || !next.Equal(t0.Add(2*time.Second+5*time.Second)) {
		t.Fatalf("third restart at %v, looping %v; want %v and looping", next, r.Looping(), t0.Add(7*time.Second))
	}
	r.Started(next)
	if step := r.Next(next, 0).Sub(next); step != 10*time.Second {
		t.Fatalf("second step %v; want 10s (doubled, capped at the window)", step)
	}
	// A longer backoff step wins.
	if step := r.Next(next, 30*time.Second).Sub(next); step != 30*time.Second {
		t.Fatalf("step %v with a 30s backoff; want 30s", step)
	}
	// A process that ran a whole window ends the loop.
	r.Exited(10 * time.Second)
	if r.Looping() || !r.Next(next, 0).Equal(next) {
		t.Fatal("still looping after a process ran for the whole window")
	}
}

func TestRestartsSpreadOverTheWindowDoNotLoop(t *testing.T) {
	r := Restarts{Limit: 2, Window: 10 * time.Second}
	at := time.Unix(1000, 0)
	for range 20 {
		if next := r.Next(at, 0); !next.Equal(at) {
			t.Fatalf("a restart every 6s waits until %v", next)
		}
		r.Started(at)
		at = at.Add(6 * time.Second)
	}
}

func TestStartPermanent(t *testing.T) {
	_, notFound := exec.LookPath("resilientmcp-no-such-command")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{notFound, true},
		{&fs.PathError{Op: "fork/exec", Path: "/x", Err: fs.ErrPermission}, true},
		{&fs.PathError{Op: "chdir", Path: "/gone", Err: fs.ErrNotExist}, true},
		{errors.New("fork/exec: resource temporarily unavailable"), false},
	} {
		if got := StartPermanent(c.err); got != c.want {
			t.Errorf("StartPermanent(%v) = %v; want %v", c.err, got, c.want)
		}
	}
}
