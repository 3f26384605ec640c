package wire

import (
	"context"
	"fmt"
)

// UnwrittenError is a write to a stdio server's stdin that failed before a
// byte of the request was written (the server's end of the pipe was
// closed: it exited, or closed its stdin): no server read any of it, so the
// request did not run. A write that failed part way is not one: the server
// may have read the part before, and mcp-go writes a request in one Write.
type UnwrittenError struct{ Err error }

func (e *UnwrittenError) Error() string { return e.Err.Error() }
func (e *UnwrittenError) Unwrap() error { return e.Err }

// RefuseTooLarge records, on the exchange ctx carries (none: nothing), that
// the answer to the request sent under ctx was a stdout line over limit,
// skipped: the attempt's failure is ErrResponseTooLarge, as an HTTP answer
// over the limit is (it ran, and is never sent again).
func RefuseTooLarge(ctx context.Context, limit int64) {
	if ex, ok := ctx.Value(exchangeKey{}).(*Exchange); ok {
		ex.refuse(&lineTooLargeError{limit: limit})
	}
}

// lineTooLargeError is the failure of an answer on a stdio server's stdout
// over the limit.
type lineTooLargeError struct{ limit int64 }

func (e *lineTooLargeError) Error() string {
	return fmt.Sprintf("resilientmcp: answer larger than the limit of %d bytes (WithMaxResponseBytes); the server's stdout line was skipped", e.limit)
}

func (e *lineTooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }
