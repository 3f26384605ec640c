package client

import (
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/progress"
)

// ProgressTimeoutError is in the chain of a call that ended because no
// progress came for it for Idle (ProgressTimeout, WithProgressTimeout). It
// matches context.DeadlineExceeded with errors.Is: the call ran out of time,
// as a deadline would have ended it. Like every error the client returns, it
// is immutable and safe to share between goroutines.
type ProgressTimeoutError = progress.TimeoutError

// progressCall is a call followed by its progress (client/internal/progress).
type progressCall = progress.Call

// governs reports how a call with options o, of a client whose
// ProgressTimeout is idle, is followed by its progress: the idle timeout
// that governs it (0: none) and the OnProgress to tell; ok is false when
// it is neither governed nor followed. The client's side of progress (the
// registry, notifications/cancelled) is client/internal/notify's.
func governs(idle time.Duration, o *callOptions) (_ time.Duration, onProgress func(mcp.ProgressNotification), ok bool) {
	if o != nil {
		if o.ofTask {
			// The task call governs its requests as a whole.
			return 0, nil, false
		}
		if o.progressTimeout > 0 {
			idle = o.progressTimeout
		}
		onProgress = o.onProgress
	}
	return idle, onProgress, idle > 0 || onProgress != nil
}
