package policy

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/autherr"
)

// Class is what a failed attempt means for the call. The failures behind
// each class are listed in FAILURES.md.
type Class int

const (
	// Caller: the caller's context ended. Never retried.
	Caller Class = iota
	// ServerError: the server answered the request with an error of its
	// own (a JSON-RPC error, whatever its HTTP status; a 404 in the
	// stateless era: a method or endpoint it does not have; a 4xx to
	// initialize, which mcp-go takes for a legacy SSE server). Returned as
	// is: sending it again would get the same answer. A 4xx without a
	// JSON-RPC error is Rejected.
	ServerError
	// AuthRequired: the server wants authorization (401, 403). The request
	// did not run.
	AuthRequired
	// Expired: the server rejected the request before running it
	// because the session expired (or the server speaks another protocol
	// version now). Re-initialize once per generation and resend any call.
	Expired
	// NotSent: the request provably did not reach the server's
	// handler: no connection could be made, it was not completely written,
	// the server declined it unread (408, 425, 429, 503), or an HTTP/2 GOAWAY
	// left its stream unprocessed. Resend any call.
	NotSent
	// OutcomeUnknown: the request may have run (the connection broke after
	// it was sent; a 502, 504, 499 or other 5xx not Broken or Rejected: the
	// answer was lost; an HTTP/2 REFUSED_STREAM, which a proxy may send
	// after forwarding it; an answer to another request). Replay only if
	// safe.
	OutcomeUnknown
	// Broken: the request ran, or may have, and what came back is not
	// usable (a 500 with a body, a 2xx that is not MCP, an answer over the
	// size limit). Never replayed: the same answer would come back.
	Broken
	// Rejected: the server, or a proxy before it, refused the request with
	// an HTTP status of HTTP's own (a 4xx that carries no JSON-RPC error,
	// 501, 505): it did not run, and sent again it would be refused again.
	Rejected
)

func (c Class) String() string {
	return [...]string{"caller", "server error", "authorization", "session expired", "not sent", "outcome unknown", "broken answer", "rejected"}[c]
}

// Verdict is the classification of one failed attempt.
type Verdict struct {
	Class Class
	// Corrupt: the session answered another request (the wire package's guard): take it
	// out of service.
	Corrupt bool
	// Cause: what the failure was, when mcp-go's error does not say (the
	// guard refused the answer; an HTTP status without a JSON-RPC error,
	// which mcp-go reports untyped); the call reports it instead.
	Cause error
	// Sent: the request was completely written; it may have run.
	Sent bool
	// Unreachable: no connection could be made. The session itself may be
	// fine; the server is not answering at all.
	Unreachable bool
	// Renegotiate: the server rejected our protocol version; allowed once
	// per call, so a server that rejects every version is not a loop.
	Renegotiate bool
	// Busy: the server declined the request unread (429, 503); it is
	// there, and asked for RetryAfter's pause (0 if it named none).
	Busy       bool
	RetryAfter time.Duration
	// IdleClosed: the connection the request took was closing before the
	// request reached the server (closed while idle, found closed by the
	// check before the write, or a graceful HTTP/2 GOAWAY that left the
	// stream unprocessed), which says nothing of the server: send it again
	// at once, on a new connection.
	IdleClosed bool
	// StaleConnection: the connection failed under a request that went out
	// on a pooled connection: most likely one the far side had already
	// dropped (a restart, an idle timeout), which says nothing of whether
	// the server fails requests.
	StaleConnection bool
	// SessionExpired: whatever the request's outcome, the session expired
	// (a stream's resumption met 404 or 400): open a new one before
	// anything is sent again.
	SessionExpired bool
	// RPCAnswer: the server itself answered with a JSON-RPC error, so it
	// is there and knows the session; for a probe, that is proof of life.
	// RPCCode is its code, 0 if unknown (mcp-go keeps no code of its own
	// for codes it has no error value for, unless the answer's HTTP status
	// was 400 or more).
	RPCAnswer bool
	RPCCode   int
	// Status is the HTTP status of the answer to the request, 0 if none
	// came.
	Status int
	// Why is what the failure was, for the call's error when the cause's
	// own message would not say it (a stream cut before its answer).
	Why string
}

// MayHaveRun reports whether the attempt may have run on the server.
func (v Verdict) MayHaveRun() bool {
	switch v.Class {
	case OutcomeUnknown, Broken:
		return true
	case Caller:
		return v.Sent
	}
	return false
}

// Permanent reports whether no retry can fix the failure of a dial (opening
// a session, which is safe to send again whatever failed), so it ends the
// pool's dial loop, a member's first or a reconnect: the server's own answer (a non-MCP endpoint), a 401 or 403, an
// unusable answer, a refusal by HTTP's rules, or a protocol version the
// server refuses after mcp-go already negotiated one (this was the one
// re-negotiation).
func (v Verdict) Permanent() bool {
	return v.Class == ServerError || v.Class == AuthRequired || v.Class == Broken || v.Class == Rejected || v.Renegotiate
}

// Session is what the policy needs to know of the session a request went
// out on. The zero value is no session: one being opened.
type Session struct {
	// SessionEra: the session speaks a protocol version with sessions (up
	// to 2025-11-25); on 2026-07-28 the server keeps none, so none expires.
	SessionEra bool
	// Served: the server has answered a request carrying the session's id
	// with a 2xx, so it knew the id (F26).
	Served bool
	// SessionInURL: the session is named in the URL requests are posted
	// to, not in a header (HTTP+SSE, 2024-11-05), and its server answers
	// a session it no longer knows with a 400 that is often plain text.
	SessionInURL bool
	// StreamLost: the HTTP+SSE stream the session lived on has ended, so
	// the session has (KeepThroughOutage).
	StreamLost bool
	// Sessionless: nothing proves which server answers it: an HTTP
	// session without an Mcp-Session-Id (a stateless server, or the
	// 2026-07-28 era). See KeepThroughOutage and Reidentify.
	Sessionless bool
}

// Classify decides what a failed attempt means. It is the one place that
// interprets mcp-go's errors; every rule is by errors.Is/As or by what the
// exchange recorded of the HTTP traffic, because mcp-go has no status type.
// s is the session the attempt went out on; ex what the HTTP layer saw of
// it, nil for an error met outside a request (restoring a session).
func Classify(err error, s Session, ex *wire.Exchange, ctxDone bool) Verdict {
	streamed, cut := ex.Stream()
	return classify(err, s, seen{Record: ex.Snapshot(), streamed: streamed, cut: cut, refused: ex.Refusal()}, ctxDone)
}

// seen is what the wire package's exchange recorded of an attempt, read
// once: Classify decides on these values alone, and its tests give them
// directly.
type seen struct {
	wire.Record
	// streamed, cut: the last request posted was answered with an event
	// stream, and that stream was cut (Exchange.Stream).
	streamed, cut bool
	refused       error // the answer the guard refused (Exchange.Refusal)
}

func classify(err error, s Session, ex seen, ctxDone bool) Verdict {
	rec, streamed, cut := ex.Record, ex.streamed, ex.cut
	sessionEra := s.SessionEra
	writeFailed := wire.IsWriteError(err)
	// Sent, as far as the client can tell: the request reached a
	// connection and writing it did not fail. Not having reached one is
	// believed only of a transport that reports the connections it takes.
	sent := streamed || rec.Started && (rec.GotConn || !rec.Traced) && !writeFailed
	v := func(c Class) Verdict { return Verdict{Class: c, Sent: sent, Status: rec.Status} }
	switch {
	case ctxDone && errors.Is(err, autherr.ErrUnavailable):
		// The deadline passed while the token layer waited for a token
		// (the authorization server, or the grant store's lock): the
		// request never left.
		return Verdict{Class: Caller}
	case ctxDone:
		// An answer whose status says the request did not run proves it
		// even when the context ended before the answer was classified
		// (the deadline passed while mcp-go read the body, or while a
		// loaded machine ran other goroutines): the caller is told it did
		// not run, not that it may have.
		r := v(Caller)
		if declinedUnread(rec.Status) {
			r.Sent = false
		}
		return r

	case ex.refused != nil:
		return refused(ex.refused)

	case streamed && errors.As(err, new(*transport.Error)):
		// The server accepted the request and began answering, and the
		// answer did not come: the stream was cut, or ended without it, and
		// could not be resumed (F28). It may have run. Whatever a
		// resumption met afterwards (a refused connection, a 404) is about
		// the session, not about whether the request ran.
		r := v(OutcomeUnknown)
		r.Why = "the response stream ended before the answer"
		if cut {
			r.Why = "the response stream was cut before the answer"
		}
		r.SessionExpired = sessionEra && sessionExpired(rec, s)
		return r

	case errors.Is(err, autherr.ErrUnavailable):
		// The authorization server (or the grant store) could not be
		// reached while the call waited for a token: it did not run.
		return Verdict{Class: NotSent}

	case errors.As(err, new(*autherr.Error)), errors.As(err, new(*autherr.InsufficientScopeError)):
		// The token layer could not authorize the request: it did not run.
		return v(AuthRequired)

	case errors.Is(err, transport.ErrAuthorizationRequired),
		errors.Is(err, transport.ErrOAuthAuthorizationRequired),
		errors.Is(err, transport.ErrUnauthorized),
		rec.Status == http.StatusUnauthorized, rec.Status == http.StatusForbidden:
		return v(AuthRequired)

	case errors.Is(err, transport.ErrSessionTerminated):
		// 404. Only the session era has sessions that expire; on 2026-07-28
		// a 404 means the method or the endpoint does not exist.
		if sessionEra {
			return v(Expired)
		}
		return v(ServerError)

	case sessionEra && sessionExpired(rec, s):
		// The TypeScript SDK's servers, and the many copied from them,
		// answer an expired session with 400 and a JSON-RPC error (F26).
		return v(Expired)

	case errors.Is(err, transport.ErrLegacySSEServer):
		// initialize answered 4xx: not a Streamable HTTP endpoint.
		return v(ServerError)

	case mcp.IsUnsupportedProtocolVersion(err):
		// The server was upgraded or rolled back under us. It rejected the
		// request unread, so any call may be resent after one
		// re-negotiation.
		r := v(Expired)
		r.Renegotiate = true
		return r

	case rec.Status == http.StatusTooManyRequests, rec.Status == http.StatusServiceUnavailable:
		// Both mean the server did not process the request (RFC 9110
		// 15.6.4, RFC 6585 4).
		r := v(NotSent)
		r.Busy, r.RetryAfter = true, rec.RetryAfter
		return r

	case rec.Status == http.StatusBadGateway, rec.Status == http.StatusGatewayTimeout:
		// A proxy lost the backend's answer; the backend may have run it.
		r := v(OutcomeUnknown)
		r.Cause = statusError(rec)
		return r

	case !errors.As(err, new(*transport.Error)):
		// Not a transport failure: the server answered with a JSON-RPC
		// error, whatever the HTTP status it came with.
		r := v(ServerError)
		r.RPCAnswer, r.RPCCode = true, rpcCode(err, rec)
		return r

	// An HTTP status without a JSON-RPC answer is classified by what HTTP
	// says of it, and by its class where the client does not know it
	// (F40): nothing reaches the caller as mcp-go's untyped "request
	// failed with status N".
	case rec.Status == http.StatusInternalServerError && !rec.EmptyBody:
		// The server's own failure, said in its own words: it ran, or may
		// have, and would fail again.
		r := v(Broken)
		r.Cause = statusError(rec)
		return r

	case rec.Status == http.StatusNotImplemented, rec.Status == http.StatusHTTPVersionNotSupported:
		// The server does not do what was asked: it did not run.
		r := v(Rejected)
		r.Cause = statusError(rec)
		return r

	case rec.Status >= 500, rec.Status == statusClientClosedRequest:
		// Any other 5xx (a 500 with nothing to say, 507, the 52x of
		// Cloudflare and other proxies), and nginx's 499, which a gateway
		// answers to the requests in flight as it shuts down: the request
		// may have run before the answer was lost.
		r := v(OutcomeUnknown)
		r.Cause = statusError(rec)
		r.Why = "HTTP " + strconv.Itoa(rec.Status) + ": the answer was lost"
		return r

	case rec.Status == http.StatusRequestTimeout, rec.Status == http.StatusTooEarly:
		// The server did not process it, and may if asked again: by the
		// backoff.
		r := v(NotSent)
		r.Cause = statusError(rec)
		return r

	case rec.Status >= 400:
		// Any other 4xx: refused before it ran.
		r := v(Rejected)
		r.Cause = statusError(rec)
		return r

	case wire.IsDialError(err):
		r := v(NotSent)
		r.Unreachable = true
		return r

	case rec.Status >= 200 && rec.Status < 300 && !wire.IsNetworkError(err):
		// An answer came and was not MCP: an HTML page, garbage JSON, an
		// unexpected content type. A retry gets the same answer.
		return v(Broken)

	case wire.IsServerClosedIdle(err), wire.IsPeerClosedBeforeWrite(err), wire.IsCannotRewind(err):
		// The pooled connection was closed by the server before a byte of
		// the request was written on it (or, over HTTP/2, before a stream
		// was opened for it).
		r := v(NotSent)
		r.IdleClosed = true
		return r

	case wire.HTTP2Refusal(err) != wire.H2NoRefusal:
		return h2Refusal(wire.HTTP2Refusal(err), v)

	case writeFailed && rec.Status == 0:
		// Writing the request failed, so no server read it whole: a
		// connection that broke (or that the peer had closed) before the
		// last byte went out.
		return v(NotSent)
	}
	// Reset, EOF, a timeout or a stream broken after the request was written.
	r := v(OutcomeUnknown)
	r.StaleConnection = rec.Reused && rec.Status == 0 && wire.IsNetworkError(err)
	return r
}

// h2Refusal is what an HTTP/2 peer's refusal of the request's stream means,
// argued per hop; v makes a verdict of a class.
func h2Refusal(h2 wire.H2Refusal, v func(Class) Verdict) Verdict {
	switch h2 {
	case wire.H2GoneAway:
		// Whoever sent the GOAWAY, the server or a proxy in front of it,
		// promises it did not process the streams above its last stream
		// id (RFC 9113 6.8), and a proxy cannot have forwarded a stream it
		// did not process. The connection is closing, not the server
		// failing: at once, on a new one.
		r := v(NotSent)
		r.IdleClosed = true
		return r
	case wire.H2Unprocessed:
		// Not processed either, but the peer is failing (a GOAWAY with an
		// error code, a connection that died before its first stream):
		// by the backoff.
		return v(NotSent)
	}
	// RST_STREAM REFUSED_STREAM promises only that the peer that sent it
	// did not process the stream, and that peer may be a proxy which had
	// forwarded it to a backend that then died: HAProxy refuses so the
	// streams it had sent to a replica killed under them. The client
	// cannot tell which hop refused, so the request may have run.
	// PROTOCOL_ERROR from the peer promises nothing.
	r := v(OutcomeUnknown)
	r.Why = "the HTTP/2 stream was refused (REFUSED_STREAM), possibly by a proxy after it forwarded the request"
	return r
}

// declinedUnread reports whether an answer's HTTP status alone says its
// request did not run, as the rules of classify read it: any 4xx but
// nginx's 499 (refused, or the session or authorization refused), 501,
// 503 and 505. 0 is no answer.
func declinedUnread(status int) bool {
	switch status {
	case statusClientClosedRequest:
		return false
	case http.StatusNotImplemented, http.StatusServiceUnavailable, http.StatusHTTPVersionNotSupported:
		return true
	}
	return status >= 400 && status < 500
}

// statusClientClosedRequest is nginx's 499, which gateways also answer to
// the requests in flight when they shut down.
const statusClientClosedRequest = 499

// statusError is the cause a call reports for an HTTP status answered
// without a JSON-RPC error: the status and the first bytes of the body, in
// place of mcp-go's untyped message that quotes the whole body.
func statusError(rec wire.Record) error {
	if rec.Status == 0 {
		return nil
	}
	return &wire.StatusError{Status: rec.Status, Body: rec.Body, Empty: rec.EmptyBody}
}

// rpcCode is the code of the JSON-RPC error err is the server's answer
// with: mcp-go's error values for the codes it knows, else what the
// tracker read of an answer of 400 or more; 0 if neither says.
func rpcCode(err error, rec wire.Record) int {
	if code, ok := RPCCode(err); ok {
		return code
	}
	if rec.RPCError {
		return rec.RPCCode
	}
	return 0
}

// sessionExpired reports whether the last request's answer says the session
// it carried expired (F26): a 404, or a 400 with a
// JSON-RPC error, to a request with a session id on a session the server has
// accepted before. A 400 on a session that has served nothing yet is the
// server's answer to the request, as is an error that can only be about the
// request itself.
func sessionExpired(rec wire.Record, s Session) bool {
	if s.SessionInURL && s.Served {
		// Every POST carries the session (its endpoint's URL), and a
		// body the client wrote is well formed: a 404 or 400 to it, with
		// or without a JSON-RPC error, is about the session (mcp-go's SSE
		// server answers 400 "Invalid session ID", FastMCP a plain-text
		// 400, go-sdk 404).
		return rec.Status == http.StatusNotFound || rec.Status == http.StatusBadRequest
	}
	if !rec.WithSession || !s.Served {
		return false
	}
	switch rec.Status {
	case http.StatusNotFound:
		return true
	case http.StatusBadRequest:
		return rec.RPCError && !requestFault(rec.RPCCode)
	}
	return false
}

// requestFault reports whether a JSON-RPC error code is about the request
// as sent (it would be refused by any session): not a sign of an expired one.
func requestFault(code int) bool {
	switch code {
	case mcp.PARSE_ERROR, mcp.METHOD_NOT_FOUND, mcp.INVALID_PARAMS:
		return true
	}
	return false
}

// AnsweredByServer reports whether err is the server's own answer to a
// request (a JSON-RPC error, a method it does not have), which sending
// again would only repeat, as opposed to the request failing on its way.
func AnsweredByServer(err error, s Session) bool {
	return Classify(err, s, nil, false).Class == ServerError
}

// refused is what an answer the guard refused means for the call.
func refused(err error) Verdict {
	if errors.As(err, new(*wire.WrongAnswerError)) {
		// The request went out and its own answer never came: it may
		// have run. A safe call is replayed, on a new session.
		return Verdict{Class: OutcomeUnknown, Sent: true, Corrupt: true, Cause: err}
	}
	// Too large: it ran, and the same answer would come back.
	return Verdict{Class: Broken, Sent: true, Cause: err}
}
