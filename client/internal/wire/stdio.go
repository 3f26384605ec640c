package wire

// UnwrittenError is a write to a stdio server's stdin that failed before a
// byte of the request was written (the server's end of the pipe was
// closed: it exited, or closed its stdin): no server read any of it, so the
// request did not run. A write that failed part way is not one: the server
// may have read the part before, and mcp-go writes a request in one Write.
type UnwrittenError struct{ Err error }

func (e *UnwrittenError) Error() string { return e.Err.Error() }
func (e *UnwrittenError) Unwrap() error { return e.Err }
