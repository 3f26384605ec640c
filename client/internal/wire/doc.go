// Package wire is the client's HTTP boundary, below mcp-go: the tracker
// every session's requests go through, which records what happened to each
// (the Exchange), guards each answer (a wrong id, a size over the limit),
// strips credentials from a redirect that leaves the origin and never
// writes a request on a connection the server has closed. It is also the
// client's one reader of what servers send, for the client's own uses
// too: SSE streams (EventReader, sse.go) and JSON (the guard's scanner,
// scan.go; Members, members.go), and its one editor of the JSON it sends:
// a request's params and their _meta (EditRequest, EditParams, edit.go).
// It decides nothing: what a failure means for a call is the policy
// package's.
package wire
