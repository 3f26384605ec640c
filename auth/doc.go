// Package auth is who may call: one token source per client, shared by all
// its sessions and goroutines, applied as an http.RoundTripper. It knows
// HTTP, not MCP sessions.
//
// What is here: a Source that hands out the current token and replaces a
// rejected one once for every request rejected with it (16 goroutines
// refused with the same token cause one refresh), and a Transport that adds
// the token to requests for one origin only (scheme, host and port: Go's
// redirect policy compares host names alone) and sends a request again
// after a 401 with the replacement, which is safe for any request: a 401
// means it did not run. The OAuth 2.1 flow (discovery, registration,
// refresh tokens, step-up) builds on these.
//
// Written by hand, because no library has it: the refresh keyed on the
// rejected token, and the per-request origin check.
package auth
