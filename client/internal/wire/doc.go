// Package wire is the client's HTTP boundary, below mcp-go: the tracker
// every session's requests go through, which records what happened to each
// (the Exchange), guards each answer (a wrong id, a size over the limit),
// strips credentials from a redirect that leaves the origin and never
// writes a request on a connection the server has closed. It decides
// nothing: what a failure means for a call is the policy package's.
package wire
