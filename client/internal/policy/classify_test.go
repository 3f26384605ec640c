package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// mcpgo builds an error the way mcp-go does for a transport failure:
// sendRequest wraps what SendRequest returned in *transport.Error.
func mcpgo(err error) error { return transport.NewError(fmt.Errorf("failed to send request: %w", err)) }

// h2Msg is net/http's HTTP/2 transport's message for a request it would
// have sent again after cause, had it had GetBody.
func h2Msg(cause string) string {
	return "http2: Transport: cannot retry err [" + cause + "] after Request.Body was written; define Request.GetBody to avoid this error"
}

func netErr(op string, err error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp", Err: &net.OpError{Op: op, Net: "tcp", Err: err}}
}

func TestClassifyCoversEveryFailure(t *testing.T) {
	var syntaxErr *json.SyntaxError
	_ = json.Unmarshal([]byte("<html>"), &struct{}{})
	syntaxErr = &json.SyntaxError{}
	tests := []struct {
		name       string
		err        error
		status     int
		retryAfter time.Duration
		sessionEra bool
		ctxDone    bool
		reused     bool
		gotConn    bool
		body       string
		empty      bool
		want       Class
		check      func(Verdict) bool
	}{
		{name: "caller: context ended", err: mcpgo(os.ErrDeadlineExceeded), ctxDone: true, want: Caller},
		{name: "F11: 401", err: mcpgo(&transport.AuthorizationRequiredError{}), status: 401, want: AuthRequired},
		{name: "F11: OAuth required", err: mcpgo(&transport.OAuthAuthorizationRequiredError{}), want: AuthRequired},
		{name: "F11: 403", err: mcpgo(errors.New("request failed with status 403: forbidden")), status: 403, want: AuthRequired},
		{name: "F1: 404 in the session era", err: mcpgo(transport.ErrSessionTerminated), status: 404, sessionEra: true, want: Expired},
		{name: "F1: later call on the ended session", err: mcpgo(transport.ErrSessionTerminated), sessionEra: true, want: Expired},
		{name: "404 in the stateless era", err: mcpgo(transport.ErrSessionTerminated), status: 404, want: ServerError},
		{name: "F12: initialize answered 4xx", err: mcpgo(transport.ErrLegacySSEServer), status: 405, want: ServerError},
		{name: "F13: version rejected", err: mcp.UnsupportedProtocolVersionError{Version: "2026-07-28"}, status: 400, want: Expired,
			check: func(v Verdict) bool { return v.Renegotiate }},
		{name: "F10: 429 with Retry-After", err: mcpgo(errors.New("request failed with status 429")), status: 429, retryAfter: 2 * time.Second, want: NotSent,
			check: func(v Verdict) bool { return v.RetryAfter == 2*time.Second && !v.Unreachable }},
		{name: "F10: 503", err: mcpgo(errors.New("request failed with status 503")), status: 503, want: NotSent},
		{name: "F10: 502", err: mcpgo(errors.New("request failed with status 502")), status: 502, want: OutcomeUnknown},
		{name: "F10: 504", err: mcpgo(errors.New("request failed with status 504")), status: 504, want: OutcomeUnknown},
		{name: "F10: 500", err: mcpgo(errors.New("request failed with status 500")), status: 500, want: Broken},
		{name: "400 without a JSON-RPC error: refused, did not run", err: mcpgo(errors.New("request failed with status 400")), status: 400, want: Rejected,
			check: func(v Verdict) bool { return !v.MayHaveRun() && v.Permanent() }},
		{name: "F40: 499 with an empty body (a gateway shutting down)", err: mcpgo(errors.New("request failed with status 499: ")), status: 499, empty: true, want: OutcomeUnknown,
			check: func(v Verdict) bool { return v.MayHaveRun() && strings.Contains(v.Cause.Error(), "499") }},
		{name: "F40: 520 (a proxy's own)", err: mcpgo(errors.New("request failed with status 520: <html>")), status: 520, body: "<html>", want: OutcomeUnknown,
			check: func(v Verdict) bool { return strings.Contains(v.Cause.Error(), `"<html>"`) }},
		{name: "F40: 530", err: mcpgo(errors.New("request failed with status 530")), status: 530, want: OutcomeUnknown},
		{name: "F40: 500 with an empty body", err: mcpgo(errors.New("request failed with status 500: ")), status: 500, empty: true, want: OutcomeUnknown},
		{name: "501: not implemented, did not run", err: mcpgo(errors.New("request failed with status 501")), status: 501, want: Rejected},
		{name: "F40: 413 with an empty body", err: mcpgo(errors.New("request failed with status 413: ")), status: 413, empty: true, want: Rejected},
		{name: "408: not processed, may be asked again", err: mcpgo(errors.New("request failed with status 408")), status: 408, want: NotSent},
		{name: "F40: -32603 in a 500's body is the server's answer", err: mcp.ErrInternalError, status: 500, want: ServerError,
			check: func(v Verdict) bool { return v.RPCAnswer && v.RPCCode == mcp.INTERNAL_ERROR }},
		{name: "F40: -32603 in a 200", err: fmt.Errorf("%w: child exited", mcp.ErrInternalError), status: 200, want: ServerError,
			check: func(v Verdict) bool { return v.RPCCode == mcp.INTERNAL_ERROR }},
		{name: "JSON-RPC error from the server", err: mcp.ErrMethodNotFound, status: 200, want: ServerError},
		{name: "F7: connection refused", err: mcpgo(netErr("dial", syscall.ECONNREFUSED)), want: NotSent,
			check: func(v Verdict) bool { return v.Unreachable }},
		{name: "F7: DNS failure", err: mcpgo(&url.Error{Op: "Post", Err: &net.DNSError{Err: "no such host", Name: "mcp.invalid"}}), want: NotSent,
			check: func(v Verdict) bool { return v.Unreachable }},
		{name: "F2/F3: EOF on a reused connection", err: mcpgo(&url.Error{Op: "Post", Err: io.EOF}), want: OutcomeUnknown},
		{name: "F4: connection reset", err: mcpgo(netErr("read", syscall.ECONNRESET)), gotConn: true, want: OutcomeUnknown,
			check: func(v Verdict) bool { return !v.StaleConnection }},
		{name: "F3/F4: reset on a pooled connection", err: mcpgo(netErr("read", syscall.ECONNRESET)), reused: true, want: OutcomeUnknown,
			check: func(v Verdict) bool { return v.StaleConnection }},
		{name: "502 on a pooled connection is the server's answer", err: mcpgo(errors.New("request failed with status 502")), status: 502, reused: true, want: OutcomeUnknown,
			check: func(v Verdict) bool { return !v.StaleConnection }},
		{name: "F5: timeout", err: mcpgo(netErr("read", os.ErrDeadlineExceeded)), want: OutcomeUnknown},
		{name: "stream broken mid-response", err: transport.NewError(fmt.Errorf("reading SSE: %w", io.ErrUnexpectedEOF)), status: 200, want: OutcomeUnknown},
		{name: "F12: HTML page", err: transport.NewError(errors.New("unexpected content type: text/html")), status: 200, gotConn: true, want: Broken},
		{name: "F12: garbage JSON", err: transport.NewError(fmt.Errorf("failed to decode response: %w", syntaxErr)), status: 200, gotConn: true, want: Broken},
		{name: "reset before the request was completely written", err: mcpgo(netErr("write", syscall.EPIPE)), gotConn: true, want: NotSent,
			check: func(v Verdict) bool { return !v.Unreachable && !v.Sent && !v.MayHaveRun() }},
		{name: "broken pipe while the body was written through ReadFrom", err: mcpgo(&url.Error{Op: "Post", Err: &net.OpError{Op: "readfrom", Net: "tcp", Err: &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}}}), gotConn: true, want: NotSent,
			check: func(v Verdict) bool { return !v.MayHaveRun() }},
		{name: "reset after the request was written", err: mcpgo(netErr("read", syscall.ECONNRESET)), gotConn: true, want: OutcomeUnknown,
			check: func(v Verdict) bool { return v.Sent && v.MayHaveRun() }},
		{name: "a pooled connection the server closed before the write", err: mcpgo(&url.Error{Op: "Post", Err: errors.New("http: server closed idle connection")}), want: NotSent,
			check: func(v Verdict) bool { return v.IdleClosed && !v.MayHaveRun() }},
		{name: "the connection check found the pooled connection closed before the write", err: mcpgo(netErr("write", wire.ErrPeerClosed)), reused: true, want: NotSent,
			check: func(v Verdict) bool { return v.IdleClosed && !v.MayHaveRun() }},
		{name: "h2: REFUSED_STREAM, as net/http reports it with no GetBody", err: mcpgo(&url.Error{Op: "Post", Err: errors.New(h2Msg("stream error: stream ID 9; REFUSED_STREAM; received from peer"))}), gotConn: true, want: OutcomeUnknown,
			check: func(v Verdict) bool { return v.MayHaveRun() && strings.Contains(v.Why, "REFUSED_STREAM") }},
		{name: "h2: PROTOCOL_ERROR from the peer", err: mcpgo(&url.Error{Op: "Post", Err: errors.New(h2Msg("stream error: stream ID 3; PROTOCOL_ERROR; received from peer"))}), gotConn: true, want: OutcomeUnknown,
			check: func(v Verdict) bool { return v.MayHaveRun() }},
		{name: "h2: graceful GOAWAY below the stream", err: mcpgo(&url.Error{Op: "Post", Err: errors.New(h2Msg("http2: Transport received Server's graceful shutdown GOAWAY"))}), gotConn: true, want: NotSent,
			check: func(v Verdict) bool { return v.IdleClosed && !v.MayHaveRun() }},
		{name: "h2: GOAWAY with an error code on a first stream", err: mcpgo(&url.Error{Op: "Post", Err: errors.New("http2: Transport received GOAWAY from server ErrCode:INTERNAL_ERROR")}), gotConn: true, want: NotSent,
			check: func(v Verdict) bool { return !v.IdleClosed && !v.MayHaveRun() }},
		{name: "h2: the connection died before its first stream", err: mcpgo(&url.Error{Op: "Post", Err: errors.New("http2: client conn could not be established")}), gotConn: true, want: NotSent},
		{name: "h2: the connection died with the stream on it", err: mcpgo(&url.Error{Op: "Post", Err: io.ErrUnexpectedEOF}), reused: true, want: OutcomeUnknown},
		{name: "F25: deadline after the request was written", err: mcpgo(os.ErrDeadlineExceeded), ctxDone: true, gotConn: true, want: Caller,
			check: func(v Verdict) bool { return v.MayHaveRun() }},
		{name: "deadline before the request was written", err: mcpgo(os.ErrDeadlineExceeded), ctxDone: true, want: Caller,
			check: func(v Verdict) bool { return !v.MayHaveRun() }},
		// The 503 came back, and the deadline passed before the call
		// classified it (under load, 8 of 200 calls of
		// TestRetryBudgetCapsRetriesOfManyFailingCalls): it did not run.
		{name: "deadline after a 503 came back", err: mcpgo(errors.New("request failed with status 503: busy")), status: 503, ctxDone: true, gotConn: true, want: Caller,
			check: func(v Verdict) bool { return !v.MayHaveRun() }},
		{name: "deadline after a 401 came back", err: mcpgo(&transport.AuthorizationRequiredError{}), status: 401, ctxDone: true, gotConn: true, want: Caller,
			check: func(v Verdict) bool { return !v.MayHaveRun() }},
		{name: "deadline after a 404 came back", err: mcpgo(transport.ErrSessionTerminated), status: 404, sessionEra: true, ctxDone: true, gotConn: true, want: Caller,
			check: func(v Verdict) bool { return !v.MayHaveRun() }},
		{name: "deadline after a 502 came back", err: mcpgo(errors.New("request failed with status 502: bad gateway")), status: 502, ctxDone: true, gotConn: true, want: Caller,
			check: func(v Verdict) bool { return v.MayHaveRun() }},
		{name: "deadline after a 499 came back", err: mcpgo(errors.New("request failed with status 499")), status: 499, ctxDone: true, gotConn: true, want: Caller,
			check: func(v Verdict) bool { return v.MayHaveRun() }},
		{name: "deadline while a 200 was read", err: mcpgo(os.ErrDeadlineExceeded), status: 200, ctxDone: true, gotConn: true, want: Caller,
			check: func(v Verdict) bool { return v.MayHaveRun() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Rows are net/http requests: started, traced; reused implies a
			// connection.
			ex := seen{Record: wire.Record{Status: tt.status, RetryAfter: tt.retryAfter, Started: true, Traced: true, GotConn: tt.gotConn || tt.reused, Reused: tt.reused, Body: tt.body, EmptyBody: tt.empty}}
			v := classify(tt.err, on(tt.sessionEra), ex, tt.ctxDone)
			if v.Class != tt.want {
				t.Fatalf("Classify(%v) = %v, want %v", tt.err, v.Class, tt.want)
			}
			if tt.check != nil && !tt.check(v) {
				t.Errorf("Verdict %+v fails the row's check", v)
			}
		})
	}
}

// A transport that is not net/http's reports no connections: its silence
// must not be read as "never sent", or a call whose deadline passed in
// flight would be told it did not run.
func TestUntracedTransportProvesNothing(t *testing.T) {
	ex := seen{Record: wire.Record{Started: true, Traced: false}}
	if v := classify(mcpgo(os.ErrDeadlineExceeded), on(true), ex, true); !v.MayHaveRun() {
		t.Errorf("deadline in flight through an untraced transport: %+v; want may have run", v)
	}
	ex = seen{Record: wire.Record{Started: true, Traced: true}}
	if v := classify(mcpgo(os.ErrDeadlineExceeded), on(true), ex, true); v.MayHaveRun() {
		t.Errorf("deadline before net/http took a connection: %+v; want not run", v)
	}
	if v := Classify(mcpgo(os.ErrDeadlineExceeded), on(true), wire.NewExchange(), true); v.MayHaveRun() {
		t.Errorf("deadline before the request reached the transport: %+v; want not run", v)
	}
}

// on is a session of the era given, for classifying an attempt made on it.
func on(sessionEra bool) Session { return Session{SessionEra: sessionEra} }

// F26: how a stale session is told from the server's answer to a request.
func TestClassifyExpiredSessionHoweverTheServerSaysIt(t *testing.T) {
	// mcp-go hands a 4xx whose body is a JSON-RPC error back as that error.
	tsAnswer := errors.New("Bad Request: No valid session ID provided")
	served := Session{SessionEra: true, Served: true}
	fresh := Session{SessionEra: true}
	stateless := Session{Served: true}
	// HTTP+SSE (2024-11-05): the session is in the endpoint's URL.
	sseServed := Session{SessionEra: true, Served: true, SessionInURL: true}
	sseFresh := Session{SessionEra: true, SessionInURL: true}
	status400 := mcpgo(errors.New("request failed with status 400"))
	tests := []struct {
		name        string
		s           Session
		err         error
		status      int
		rpcCode     int
		rpcError    bool
		withSession bool
		want        Class
	}{
		{"400 -32000 on a session that served (TypeScript SDK)", served, tsAnswer, 400, -32000, true, true, Expired},
		{"400 -32001 on a session that served", served, errors.New("Session not found"), 400, -32001, true, true, Expired},
		{"400 -32600 on a session that served (Python SDK)", served, mcp.ErrInvalidRequest, 400, mcp.INVALID_REQUEST, true, true, Expired},
		{"404 on a session that served", served, mcpgo(transport.ErrSessionTerminated), 404, 0, false, true, Expired},
		{"400 on a session that just opened: the server's answer", fresh, tsAnswer, 400, -32000, true, true, ServerError},
		{"400 invalid params: about the request", served, mcp.ErrInvalidParams, 400, mcp.INVALID_PARAMS, true, true, ServerError},
		{"400 parse error: about the request", served, mcp.ErrParseError, 400, mcp.PARSE_ERROR, true, true, ServerError},
		{"400 without a JSON-RPC error", served, mcpgo(errors.New("request failed with status 400: bad")), 400, 0, false, true, Rejected},
		{"400 to a request without a session id", served, tsAnswer, 400, -32000, true, false, ServerError},
		{"HTTP+SSE: 400 -32602 Invalid session ID on a session that served (mcp-go)", sseServed, status400, 400, mcp.INVALID_PARAMS, true, false, Expired},
		{"HTTP+SSE: plain-text 400 on a session that served (FastMCP)", sseServed, status400, 400, 0, false, false, Expired},
		{"HTTP+SSE: 404 session not found (go-sdk)", sseServed, mcpgo(transport.ErrSessionTerminated), 404, 0, false, false, Expired},
		{"HTTP+SSE: 400 on a session that has not served: the server's answer", sseFresh, status400, 400, 0, false, false, Rejected},
		{"2026-07-28: 404 with -32601 is method not found", stateless, mcpgo(transport.ErrSessionTerminated), 404, mcp.METHOD_NOT_FOUND, true, false, ServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := seen{Record: wire.Record{Status: tt.status, RPCCode: tt.rpcCode, RPCError: tt.rpcError, WithSession: tt.withSession, Started: true, Traced: true, GotConn: true}}
			v := classify(tt.err, tt.s, ex, false)
			if v.Class != tt.want {
				t.Fatalf("class %v, want %v", v.Class, tt.want)
			}
			if v.Class == Expired && v.MayHaveRun() {
				t.Errorf("a stale session's refusal may have run: %+v", v)
			}
		})
	}
}

// F28: a request whose answer stream opened and then broke may have run,
// whatever its resumption met; a resumption that met 404 or 400 also says
// the session is gone.
func TestClassifyALostAnswerStream(t *testing.T) {
	s := Session{SessionEra: true, Served: true}
	tests := []struct {
		name     string
		err      error
		rec      wire.Record
		cut      bool
		wantGone bool
		wantWhy  string
	}{
		{"cut, no event ids", mcpgo(errors.New("unexpected nil response")), wire.Record{Status: 200, WithSession: true}, true, false, "cut"},
		{"ended before the answer", mcpgo(errors.New("unexpected nil response")), wire.Record{Status: 200, WithSession: true}, false, false, "ended"},
		{"resumption refused: server down", mcpgo(netErr("dial", syscall.ECONNREFUSED)), wire.Record{WithSession: true}, true, false, "cut"},
		{"resumption met 404", mcpgo(fmt.Errorf("failed to resume the SSE stream for the response: %w", transport.ErrSessionTerminated)), wire.Record{Status: 404, WithSession: true}, true, true, "cut"},
		{"HTTP+SSE: accepted (202), and the session's stream lost before the answer", mcpgo(errors.New("the event stream broke")), wire.Record{Status: 202}, true, false, "cut"},
		{"resumption met the TypeScript SDK's 400", mcpgo(errors.New("failed to resume the SSE stream for the response: unexpected status 400")), wire.Record{Status: 400, RPCError: true, RPCCode: -32000, WithSession: true}, true, true, "cut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.Started, tt.rec.Traced, tt.rec.GotConn = true, true, true
			ex := seen{Record: tt.rec, streamed: true, cut: tt.cut}
			v := classify(tt.err, s, ex, false)
			if v.Class != OutcomeUnknown || !v.MayHaveRun() {
				t.Fatalf("Verdict %+v; want outcome unknown", v)
			}
			if v.SessionExpired != tt.wantGone {
				t.Errorf("SessionExpired %v, want %v", v.SessionExpired, tt.wantGone)
			}
			if !strings.Contains(v.Why, tt.wantWhy) {
				t.Errorf("why %q, want it to say %q", v.Why, tt.wantWhy)
			}
		})
	}
}
