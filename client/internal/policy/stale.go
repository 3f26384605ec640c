package policy

import "time"

// StaleFailure is what a failed listing (or read) says of the server's
// answer, for StaleIfError. A plain value.
type StaleFailure struct {
	// NotAnswered: the call failed without the server's answer (it is
	// unreachable, the breaker is open, it declined with 503 or 429 until
	// the deadline or the attempts ran out, the connection failed under
	// the request): the client's ErrUnavailable or ErrOutcomeUnknown.
	NotAnswered bool
	// Answered: the failure is the server's own word (a JSON-RPC error, an
	// answer refused as too large, a refusal for want of authorization).
	Answered bool
	// CallerCancelled: the caller's context was cancelled: it no longer
	// wants an answer.
	CallerCancelled bool
	// Closed: the client was closed.
	Closed bool
}

// StaleIfError decides whether a listing or a read that failed is answered
// with the last good answer instead (RFC 5861's stale-if-error), that answer
// being age old and the client allowing maxStale (0: never). Only a failure
// in which the server gave no answer qualifies: what the server said (a
// JSON-RPC error) is its word, and is returned as it is.
func StaleIfError(f StaleFailure, age, maxStale time.Duration) bool {
	switch {
	case maxStale <= 0, age > maxStale:
		return false
	case f.Answered, f.CallerCancelled, f.Closed:
		return false
	}
	return f.NotAnswered
}
