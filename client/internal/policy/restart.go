package policy

import (
	"errors"
	"io/fs"
	"os/exec"
	"time"
)

// StartPermanent reports whether a stdio server's process failed to start
// for a reason no retry can fix: the command is not there, or may not be
// run (or the working directory is not there). The dial loop ends, and the
// calls waiting fail at once (ErrUnavailable); the next call tries again.
// Any other failure (out of processes or file descriptors) is retried on
// the backoff schedule.
func StartPermanent(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
}

// Restarts is the restart intensity of one supervised server process (a
// stdio server): it decides whether the next start is made at once or
// waits, and whether the process counts as crash-looping, when calls
// waiting for it fail fast rather than wait. It is Erlang/OTP's supervisor
// intensity and systemd's StartLimitBurst: more than Limit restarts within
// Window is a crash loop. Unlike them, a crash loop does not give up: one
// start is made per step after that, the steps at least Window/Limit apart
// and doubling up to Window (or the backoff's step, if longer), so that a
// server that comes good again is used again.
//
// A Restarts belongs to one process slot and is not safe for concurrent
// use.
type Restarts struct {
	Limit  int
	Window time.Duration

	starts  []time.Time // the last Limit+1 starts, oldest first
	looping bool
	step    time.Duration // the floor of the next step while looping
}

// Next is told that a start is wanted at now, backoff being the dial's
// next backoff pause (0 if none is known); it returns when the start may
// be made: now, or later if the process is crash-looping. The caller makes
// the start at that time and reports it with Started.
func (r *Restarts) Next(now time.Time, backoff time.Duration) time.Time {
	if r.Limit <= 0 || len(r.starts) == 0 {
		return now
	}
	if !r.looping && r.exceeded(now) {
		r.looping = true
		r.step = r.Window / time.Duration(r.Limit)
	}
	if !r.looping {
		return now
	}
	return r.starts[len(r.starts)-1].Add(max(r.step, backoff))
}

// exceeded reports whether a start at now would be one restart more than
// Limit within Window: the Limit+1 starts before it (Limit restarts after
// the first of them) all fall within it.
func (r *Restarts) exceeded(now time.Time) bool {
	return len(r.starts) > r.Limit && now.Sub(r.starts[0]) < r.Window
}

// Started records a start made at at.
func (r *Restarts) Started(at time.Time) {
	if r.Limit <= 0 {
		return
	}
	if len(r.starts) > r.Limit {
		r.starts = append(r.starts[:0], r.starts[1:]...)
	}
	r.starts = append(r.starts, at)
	if r.looping {
		r.step = min(2*r.step, r.Window)
	}
}

// Exited records that the process started last exited after running for
// uptime: one that ran for a whole Window was not crash-looping, and the
// count starts afresh.
func (r *Restarts) Exited(uptime time.Duration) {
	if uptime >= r.Window {
		r.looping = false
		r.starts = r.starts[:0]
	}
}

// Looping reports whether the process is crash-looping: calls waiting for
// it with no session in service fail fast (ErrUnavailable), with what the
// last exit said.
func (r *Restarts) Looping() bool { return r.looping }

// Count is the number of restarts within Window before now, at most Limit+1.
func (r *Restarts) Count(now time.Time) int {
	n := 0
	for _, t := range r.starts {
		if now.Sub(t) < r.Window {
			n++
		}
	}
	return max(n-1, 0)
}
