package client

import "github.com/resilientmcp/resilientmcp/client/internal/progress"

// ProgressTimeoutError is in the chain of a call that ended because no
// progress came for it for Idle (ProgressTimeout, WithProgressTimeout). It
// matches context.DeadlineExceeded with errors.Is: the call ran out of time,
// as a deadline would have ended it. Like every error the client returns, it
// is immutable and safe to share between goroutines.
type ProgressTimeoutError = progress.TimeoutError

// progressCall is a call followed by its progress (client/internal/progress).
type progressCall = progress.Call
