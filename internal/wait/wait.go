// Package wait is how the module's retry and backoff loops pause: a timer
// that a context or a stop channel cuts short, and is always stopped.
// (filelock's poll and auth/redisstore's wait for its lock keep timers of
// their own.)
package wait

import (
	"context"
	"time"
)

// Result is how a Sleep ended.
type Result int

const (
	Elapsed   Result = iota // the whole pause passed
	Cancelled               // ctx ended first
	Stopped                 // stop was closed first
)

// Sleep pauses for d, or until ctx ends or stop is closed, whichever comes
// first. A nil ctx or stop never ends the pause; d <= 0 returns at once.
func Sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) Result {
	if d <= 0 {
		return Elapsed
	}
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return Elapsed
	case <-done:
		return Cancelled
	case <-stop:
		return Stopped
	}
}
