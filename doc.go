// Package resilientmcp makes MCP clients survive the real world.
//
// Agents that talk to MCP servers over Streamable HTTP break in the same few
// ways: a restarted server no longer knows the session and answers 404; an
// idle connection is dropped by a load balancer and the next call fails; a
// session goes bad under many goroutines; a reconnect loop without backoff
// hammers a server that is coming back. The client package's ResilientClient
// wraps mcp-go's streamable HTTP client and hides all of that: it
// re-initializes an expired session once for all goroutines and resends the
// call, waits for an unreachable server with exponential backoff, and never
// replays a call unless it is safe to repeat. Nor does it trust what comes back:
// an answer carrying another request's id is never returned, an answer
// larger than WithMaxResponseBytes is refused at the limit, and credentials
// do not follow a redirect to another origin.
//
// Replace
//
//	c, _ := mcpclient.NewStreamableHttpClient(url)
//	_ = c.Start(ctx)
//	_, _ = c.Initialize(ctx, initReq)
//
// with
//
//	c, err := client.New(url, client.WithKeepAlive(30*time.Second))
//	if err != nil {
//		return err // a bad URL or option: New does no I/O
//	}
//	defer c.Close()
//	_, err = c.Initialize(ctx, initReq) // optional: the first call initializes
//	res, err := c.CallTool(ctx, req)
//
// ResilientClient also has the methods of mcp-go's concrete *client.Client
// that MCPClient lacks (GetSessionId, the iterators, the tasks API, Listen,
// OnConnectionLost, ...), with the same signatures, so code written against
// the concrete type compiles after the swap; only Start and GetTransport are
// left out. When an elicitation handler accepts a form and leaves fields
// out, the client fills them in from the form's defaults (SEP-1034).
//
// What the client does can be watched: client.WithObserver is told of every
// call, every attempt to send it and why, and what the client does on its
// own; package otelmcp is an observer that records OpenTelemetry traces and
// metrics by MCP's semantic conventions, and carries the trace context to
// the server in each request's _meta.
//
// The mechanisms live in packages of their own that know nothing of MCP or of
// each other: retry (the backoff schedule, the retry budget), health (idle
// tracking, keepalive probing, failure threshold) and pool (sessions shared
// by goroutines, one replacement per generation, the reconnect loop). Package
// client is the one place that joins them to mcp-go.
//
// # Glossary
//
// One word for each thing, in the code, its comments, its logs and its docs.
//
//   - session: what initialize opens and the client sends calls on; in the
//     session era (up to 2025-11-25) the server keeps it under an
//     Mcp-Session-Id, in the stateless era (2026-07-28) it is only the
//     client's own (the negotiated version, the server's answer).
//   - member: one of the WithPoolSize places of the pool (a slot). It holds
//     one session at a time; each session it holds is a generation.
//   - generation: one session of a member. Discarding a member's generation N
//     starts one replacement, however many goroutines saw N fail; later
//     discards of N are ignored.
//   - expired: a session the server no longer knows, whatever the reason (a
//     restart, an idle timeout, another replica, a protocol version it no
//     longer speaks): 404, or 400 with a JSON-RPC error, to a request carrying
//     a session id the server had served (FAILURES.md F1, F26). Not "stale",
//     "gone", "forgotten", "dead", "unknown" or "invalid": those words are the
//     servers', the code's is expired (policy.Expired, LossExpired,
//     AttemptSessionExpired).
//   - loss, lost: a session taken out of service, for one of the reasons of
//     LossReason: expired, unreachable, unhealthy, corrupt, requested.
//     OnConnectionLost and the SessionLost event are told of each loss once.
//     (An answer is also lost, when the request went out and its answer did
//     not come back: the outcome is then unknown.)
//   - dial: one try to give a member a session, the pool's DialFunc: open a
//     new one (the initialize handshake) or, after the server was
//     unreachable, put the kept one back. A member's first session is its
//     first dial (OpenFirst); DialFailed is a dial that failed.
//   - reconnect: the dials that follow a loss, on the backoff schedule, until
//     one gives the member a session (the reconnect loop: one per member, in
//     pool, for every caller at once). Its new session is one of:
//   - re-initialization: a new session in place of an expired one
//     (OpenReinitialize, Stats.Reinitializations, WaitReinitialize);
//   - redial: a new session in place of one lost for any other reason: its
//     connection broke or hung, it failed its probes, or it answered another
//     request (OpenRedial, Stats.Redials; WaitRedial is a call's wait for
//     any reconnect but a re-initialization). A session kept through an
//     unreachable server is neither: it goes back into service (OpenKept),
//     or, if the server answers and not as a live session would, it
//     expired.
//   - probe: a ping (session era) or server/discover (stateless era) the
//     client sends on its own to learn whether a session is alive: a
//     keepalive probe of an idle session, or a probe before a call on a
//     session not heard from within the keepalive interval, or in doubt.
//   - attempt: one send of a call; a retry is any attempt after the first.
//     A retry is a resend or a replay:
//   - resend: the request again, when the attempt before provably did not
//     run (not sent, declined unread with 503 or 429, a GOAWAY's unprocessed
//     stream, refused with 401 for a token, or its session expired): any
//     call is resent, on the same session or on a new one.
//   - replay: the call again when the attempt before may have run (its
//     outcome unknown): only a call safe to repeat (read-only or idempotent
//     annotations, SafeToRepeat) is replayed; for any other a replay is
//     refused and the call ends with ErrOutcomeUnknown. Stats.Replays, whose
//     name is older than this glossary, counts the resends after an expiry.
//   - outage: the server unreachable (or failing as a whole, 5xx) with no
//     session in service, from the first such failure (a call's, a probe's
//     or a dial's) until an answer proves the server is there or a session
//     is in service again; the circuit breaker (WithFailFastAfter) opens when
//     an outage lasts longer than allowed.
//   - era: the session era (protocol revisions up to 2025-11-25) or the
//     stateless era (2026-07-28).
package resilientmcp
