package client

import "errors"

var (
	// ErrClosed is returned by every call made after Close, and by calls
	// that Close interrupted.
	ErrClosed = errors.New("resilientmcp: client closed")

	// ErrOutcomeUnknown means the request may have reached the server and run
	// there, and was not sent again because it is not safe to repeat (a tool
	// not annotated read-only or idempotent). It wraps the failure that made
	// the outcome unknown. Check on the server before trying again.
	ErrOutcomeUnknown = errors.New("resilientmcp: outcome unknown: the request may have run on the server and is not safe to repeat")

	// ErrUnavailable means no healthy session could be had before the
	// deadline. The request was not sent. It wraps the context's error and the
	// last reason the server could not be reached.
	ErrUnavailable = errors.New("resilientmcp: server unavailable")
)
