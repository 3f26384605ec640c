package wire

import (
	"context"
	"fmt"
	"net/http"
)

// What an HTTP+SSE session (client/internal/sse) tells the exchange of a
// call, since its answers come on the session's stream rather than in the
// answer to the call's POST.

// MarkStreamCut records, on the exchange ctx carries (none: nothing), that
// the request sent under ctx was accepted and its answer was due on an
// event stream that was cut before it came. The policy reads it as it
// reads a response stream cut before its answer (F28): it may have run.
func MarkStreamCut(ctx context.Context) {
	if ex, ok := ctx.Value(exchangeKey{}).(*Exchange); ok {
		ex.mu.Lock()
		ex.streamed, ex.cut = true, true
		ex.mu.Unlock()
	}
}

// RefuseEventTooLarge records, on the exchange ctx carries, that the
// answer to the request sent under ctx was an event over limit, skipped:
// the attempt's failure is ErrResponseTooLarge (it ran, and is never sent
// again), as for an answer over the limit to a POST.
func RefuseEventTooLarge(ctx context.Context, limit int64) {
	if ex, ok := ctx.Value(exchangeKey{}).(*Exchange); ok {
		ex.refuse(&eventTooLargeError{limit: limit})
	}
}

// eventTooLargeError is the failure of an answer on an HTTP+SSE session's
// stream over the limit.
type eventTooLargeError struct{ limit int64 }

func (e *eventTooLargeError) Error() string {
	return fmt.Sprintf("resilientmcp: answer larger than the limit of %d bytes (WithMaxResponseBytes); the event was read no further and skipped", e.limit)
}

func (e *eventTooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }

type unguardedKey struct{}

// Unguarded returns ctx for a request whose answer the Tracker passes on
// as it comes, neither measured nor checked by the guard: an HTTP+SSE
// session's stream, which its reader bounds itself, event by event, so
// that it can tell which call an answer over the limit was for.
func Unguarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, unguardedKey{}, true)
}

func unguarded(req *http.Request) bool { return req.Context().Value(unguardedKey{}) != nil }
