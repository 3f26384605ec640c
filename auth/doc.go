// Package auth is who may call: one token source per client, shared by all
// its sessions and goroutines, applied as an http.RoundTripper under
// mcp-go's transport. It knows HTTP and OAuth, not MCP sessions.
//
// Transport adds the token to requests for one origin only (scheme, host
// and port: Go's redirect policy compares host names alone), sends a
// request again after a 401 with a replacement (safe for any request: a
// 401 means it did not run), and after a 403 insufficient_scope with a
// token of more scope. Its Authorizer is a Source (a token obtained
// elsewhere, replaced once for every request rejected with it) or an OAuth.
//
// OAuth is MCP's authorization (2025-11-25, with the 2025-03-26
// fallbacks): discovery from the WWW-Authenticate challenge (RFC 9728,
// RFC 8414, OpenID), client ID metadata documents or dynamic registration
// (RFC 7591), PKCE S256, resource indicators (RFC 8707) on every
// authorization and token request, scope selection and step-up, token endpoint
// authentication none, client_secret_basic, client_secret_post and
// private_key_jwt (RFC 7523), the authorization-code and client_credentials
// grants, the JWT bearer grant (RFC 7523) with a workload's assertion
// (Config.Workload) or, for enterprise-managed authorization
// (Config.Enterprise), an ID-JAG obtained by token exchange (RFC 8693) at
// the enterprise's identity provider, and DPoP-bound tokens (RFC 9449: a
// key per grant kept in the Store, a proof on every token request and
// every request to the MCP server, the servers' nonces kept per origin).
// Its lifecycle: a refresh 10 % of the lifetime before expiry, one
// for all callers (a rotated refresh token is sent once); a lost grant is
// an Error at once, with one authorization in the background; an
// unreachable authorization server is paced by one backoff while a valid
// token keeps working.
//
// The grant (the client's registration and its tokens) lives in a Store,
// keyed by issuer, resource and client: NewMemoryStore (the default, one
// process), NewFileStore (every process of a machine, and the next one
// after a restart) or auth/redisstore (every replica). Every renewal runs
// under the Store's lock for its key, reads the grant again once it holds
// it (another process may have renewed already: its token is used and
// nothing is sent), and writes with a compare-and-swap on the version. In
// a process, the one renewal under way (a singleflight all callers wait
// on, each within its own context) is the fast path in front of that
// lock.
//
// From libraries: golang.org/x/oauth2 does the authorization URL, PKCE,
// the code exchange, the refresh and the client_credentials grant (and,
// with the grant type replaced, which it allows, the token exchange and
// the JWT bearer grant);
// golang.org/x/sync/singleflight groups the callers waiting for one
// renewal; mcp-go's AuthServerMetadata type reads
// RFC 8414 documents, and its transport.TokenStore is still accepted.
// Written here because no library has it: discovery with MCP's fallback
// order, dynamic registration (x/oauth2 has none), the refresh keyed on
// the rejected token with its shared backoff, step-up, the per-request
// origin check, adding resource and the client assertion to x/oauth2's
// token requests (its refresh takes no parameters), signing the assertion
// and the DPoP proofs (JWT libraries sign only with concrete key types, not
// with a crypto.Signer such as an HSM's key), the renewal under a Store's
// lock (no OAuth library shares a grant between processes), and
// FileStore's file lock (internal/filelock, on the syscall package:
// github.com/gofrs/flock would put two more modules, it and
// golang.org/x/sys, in every program that imports client).
//
// Nothing here puts a token, code, verifier, secret or private key in an
// error or a log.
package auth
