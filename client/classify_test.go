package client

import (
	"context"
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
)

// wire builds an error the way mcp-go does for a transport failure:
// sendRequest wraps what SendRequest returned in *transport.Error.
func wire(err error) error { return transport.NewError(fmt.Errorf("failed to send request: %w", err)) }

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
		want       class
		check      func(verdict) bool
	}{
		{name: "caller: context ended", err: wire(os.ErrDeadlineExceeded), ctxDone: true, want: classCaller},
		{name: "F11: 401", err: wire(&transport.AuthorizationRequiredError{}), status: 401, want: classAuth},
		{name: "F11: OAuth required", err: wire(&transport.OAuthAuthorizationRequiredError{}), want: classAuth},
		{name: "F11: 403", err: wire(errors.New("request failed with status 403: forbidden")), status: 403, want: classAuth},
		{name: "F1: 404 in the session era", err: wire(transport.ErrSessionTerminated), status: 404, sessionEra: true, want: classExpired},
		{name: "F1: later call on the ended session", err: wire(transport.ErrSessionTerminated), sessionEra: true, want: classExpired},
		{name: "404 in the stateless era", err: wire(transport.ErrSessionTerminated), status: 404, want: classServer},
		{name: "F12: initialize answered 4xx", err: wire(transport.ErrLegacySSEServer), status: 405, want: classServer},
		{name: "F13: version rejected", err: mcp.UnsupportedProtocolVersionError{Version: "2026-07-28"}, status: 400, want: classExpired,
			check: func(v verdict) bool { return v.renegotiate }},
		{name: "F10: 429 with Retry-After", err: wire(errors.New("request failed with status 429")), status: 429, retryAfter: 2 * time.Second, want: classNotSent,
			check: func(v verdict) bool { return v.retryAfter == 2*time.Second && !v.unreachable }},
		{name: "F10: 503", err: wire(errors.New("request failed with status 503")), status: 503, want: classNotSent},
		{name: "F10: 502", err: wire(errors.New("request failed with status 502")), status: 502, want: classUnknown},
		{name: "F10: 504", err: wire(errors.New("request failed with status 504")), status: 504, want: classUnknown},
		{name: "F10: 500", err: wire(errors.New("request failed with status 500")), status: 500, want: classBroken},
		{name: "400", err: wire(errors.New("request failed with status 400")), status: 400, want: classServer},
		{name: "JSON-RPC error from the server", err: mcp.ErrMethodNotFound, status: 200, want: classServer},
		{name: "F7: connection refused", err: wire(netErr("dial", syscall.ECONNREFUSED)), want: classNotSent,
			check: func(v verdict) bool { return v.unreachable }},
		{name: "F7: DNS failure", err: wire(&url.Error{Op: "Post", Err: &net.DNSError{Err: "no such host", Name: "mcp.invalid"}}), want: classNotSent,
			check: func(v verdict) bool { return v.unreachable }},
		{name: "F2/F3: EOF on a reused connection", err: wire(&url.Error{Op: "Post", Err: io.EOF}), want: classUnknown},
		{name: "F4: connection reset", err: wire(netErr("read", syscall.ECONNRESET)), gotConn: true, want: classUnknown,
			check: func(v verdict) bool { return !v.staleConnection }},
		{name: "F3/F4: reset on a pooled connection", err: wire(netErr("read", syscall.ECONNRESET)), reused: true, want: classUnknown,
			check: func(v verdict) bool { return v.staleConnection }},
		{name: "502 on a pooled connection is the server's answer", err: wire(errors.New("request failed with status 502")), status: 502, reused: true, want: classUnknown,
			check: func(v verdict) bool { return !v.staleConnection }},
		{name: "F5: timeout", err: wire(netErr("read", os.ErrDeadlineExceeded)), want: classUnknown},
		{name: "stream broken mid-response", err: transport.NewError(fmt.Errorf("reading SSE: %w", io.ErrUnexpectedEOF)), status: 200, want: classUnknown},
		{name: "F12: HTML page", err: transport.NewError(errors.New("unexpected content type: text/html")), status: 200, gotConn: true, want: classBroken},
		{name: "F12: garbage JSON", err: transport.NewError(fmt.Errorf("failed to decode response: %w", syntaxErr)), status: 200, gotConn: true, want: classBroken},
		{name: "reset before the request was completely written", err: wire(netErr("write", syscall.EPIPE)), gotConn: true, want: classNotSent,
			check: func(v verdict) bool { return !v.unreachable && !v.sent && !v.mayHaveRun() }},
		{name: "reset after the request was written", err: wire(netErr("read", syscall.ECONNRESET)), gotConn: true, want: classUnknown,
			check: func(v verdict) bool { return v.sent && v.mayHaveRun() }},
		{name: "a pooled connection the server closed before the write", err: wire(&url.Error{Op: "Post", Err: errors.New("http: server closed idle connection")}), want: classNotSent,
			check: func(v verdict) bool { return v.idleClosed && !v.mayHaveRun() }},
		{name: "F25: deadline after the request was written", err: wire(os.ErrDeadlineExceeded), ctxDone: true, gotConn: true, want: classCaller,
			check: func(v verdict) bool { return v.mayHaveRun() }},
		{name: "deadline before the request was written", err: wire(os.ErrDeadlineExceeded), ctxDone: true, want: classCaller,
			check: func(v verdict) bool { return !v.mayHaveRun() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Rows are net/http requests: started, traced; reused implies a
			// connection.
			ex := &exchange{rec: record{status: tt.status, retryAfter: tt.retryAfter, started: true, traced: true, gotConn: tt.gotConn || tt.reused, reused: tt.reused}}
			v := classify(tt.err, on(tt.sessionEra), ex, tt.ctxDone)
			if v.class != tt.want {
				t.Fatalf("classify(%v) = %v, want %v", tt.err, v.class, tt.want)
			}
			if tt.check != nil && !tt.check(v) {
				t.Errorf("verdict %+v fails the row's check", v)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Sat, 21 Nov 2026 12:00:05 GMT": 5 * time.Second,
		"Sat, 21 Nov 2026 11:00:00 GMT": 0,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	for _, endpoint := range []string{"", "127.0.0.1:8080/mcp", "ftp://host/mcp", "http:///mcp", "http://[::1"} {
		if c, err := New(endpoint); err == nil {
			c.Close()
			t.Errorf("New(%q) succeeded", endpoint)
		}
	}
	for name, opt := range map[string]Option{
		"negative keepalive": WithKeepAlive(-time.Second),
		"zero attempts":      WithMaxAttempts(0),
		"zero pool":          WithPoolSize(0),
		"zero call timeout":  WithCallTimeout(0),
		"nil backoff":        WithBackOff(nil),
		"nil http client":    WithHTTPClient(nil),
		"zero threshold":     WithKeepAliveFailureThreshold(0),
	} {
		if c, err := New("http://127.0.0.1:1/mcp", opt); err == nil {
			c.Close()
			t.Errorf("New with %s succeeded", name)
		}
	}
}

// A transport that is not net/http's reports no connections: its silence
// must not be read as "never sent", or a call whose deadline passed in
// flight would be told it did not run.
func TestUntracedTransportProvesNothing(t *testing.T) {
	ex := &exchange{rec: record{started: true, traced: false}}
	if v := classify(wire(os.ErrDeadlineExceeded), on(true), ex, true); !v.mayHaveRun() {
		t.Errorf("deadline in flight through an untraced transport: %+v; want may have run", v)
	}
	ex = &exchange{rec: record{started: true, traced: true}}
	if v := classify(wire(os.ErrDeadlineExceeded), on(true), ex, true); v.mayHaveRun() {
		t.Errorf("deadline before net/http took a connection: %+v; want not run", v)
	}
	if v := classify(wire(os.ErrDeadlineExceeded), on(true), &exchange{}, true); v.mayHaveRun() {
		t.Errorf("deadline before the request reached the transport: %+v; want not run", v)
	}
}

// F25 when mcp-go's error is not built on the context's (a stream cut at
// the deadline reads as "unexpected nil response"): the caller still gets
// context.DeadlineExceeded, with ErrOutcomeUnknown since it was sent.
func TestDeadlineIsInTheChainWhateverMCPGoSays(t *testing.T) {
	r := retries{method: "tools/call", max: 3, ctxErr: context.DeadlineExceeded}
	v := verdict{class: classCaller, sent: true}
	err := r.after(v, transport.NewError(errors.New("unexpected nil response")), func() bool { return false }, time.Time{}).err
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v; want ErrOutcomeUnknown and context.DeadlineExceeded", err)
	}
}

// on is a session of the era given, for classifying an attempt made on it.
func on(sessionEra bool) *session { return &session{sessionEra: sessionEra} }

// F26: how a stale session is told from the server's answer to a request.
func TestClassifyStaleSessionHoweverTheServerSaysIt(t *testing.T) {
	// mcp-go hands a 4xx whose body is a JSON-RPC error back as that error.
	tsAnswer := errors.New("Bad Request: No valid session ID provided")
	served := &session{sessionEra: true}
	served.markServed()
	fresh := &session{sessionEra: true}
	stateless := &session{}
	stateless.markServed()
	tests := []struct {
		name        string
		s           *session
		err         error
		status      int
		rpcCode     int
		rpcError    bool
		withSession bool
		want        class
	}{
		{"400 -32000 on a session that served (TypeScript SDK)", served, tsAnswer, 400, -32000, true, true, classExpired},
		{"400 -32001 on a session that served", served, errors.New("Session not found"), 400, -32001, true, true, classExpired},
		{"400 -32600 on a session that served (Python SDK)", served, mcp.ErrInvalidRequest, 400, mcp.INVALID_REQUEST, true, true, classExpired},
		{"404 on a session that served", served, wire(transport.ErrSessionTerminated), 404, 0, false, true, classExpired},
		{"400 on a session that just opened: the server's answer", fresh, tsAnswer, 400, -32000, true, true, classServer},
		{"400 invalid params: about the request", served, mcp.ErrInvalidParams, 400, mcp.INVALID_PARAMS, true, true, classServer},
		{"400 parse error: about the request", served, mcp.ErrParseError, 400, mcp.PARSE_ERROR, true, true, classServer},
		{"400 without a JSON-RPC error", served, wire(errors.New("request failed with status 400: bad")), 400, 0, false, true, classServer},
		{"400 to a request without a session id", served, tsAnswer, 400, -32000, true, false, classServer},
		{"2026-07-28: 404 with -32601 is method not found", stateless, wire(transport.ErrSessionTerminated), 404, mcp.METHOD_NOT_FOUND, true, false, classServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := &exchange{rec: record{status: tt.status, rpcCode: tt.rpcCode, rpcError: tt.rpcError, withSession: tt.withSession, started: true, traced: true, gotConn: true}}
			v := classify(tt.err, tt.s, ex, false)
			if v.class != tt.want {
				t.Fatalf("class %v, want %v", v.class, tt.want)
			}
			if v.class == classExpired && v.mayHaveRun() {
				t.Errorf("a stale session's refusal may have run: %+v", v)
			}
		})
	}
}

// F28: a request whose answer stream opened and then broke may have run,
// whatever its resumption met; a resumption that met 404 or 400 also says
// the session is gone.
func TestClassifyALostAnswerStream(t *testing.T) {
	s := &session{sessionEra: true}
	s.markServed()
	tests := []struct {
		name     string
		err      error
		rec      record
		cut      bool
		wantGone bool
		wantWhy  string
	}{
		{"cut, no event ids", wire(errors.New("unexpected nil response")), record{status: 200, withSession: true}, true, false, "cut"},
		{"ended before the answer", wire(errors.New("unexpected nil response")), record{status: 200, withSession: true}, false, false, "ended"},
		{"resumption refused: server down", wire(netErr("dial", syscall.ECONNREFUSED)), record{withSession: true}, true, false, "cut"},
		{"resumption met 404", wire(fmt.Errorf("failed to resume the SSE stream for the response: %w", transport.ErrSessionTerminated)), record{status: 404, withSession: true}, true, true, "cut"},
		{"resumption met the TypeScript SDK's 400", wire(errors.New("failed to resume the SSE stream for the response: unexpected status 400")), record{status: 400, rpcError: true, rpcCode: -32000, withSession: true}, true, true, "cut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.started, tt.rec.traced, tt.rec.gotConn = true, true, true
			ex := &exchange{rec: tt.rec, streamed: true, cut: tt.cut}
			v := classify(tt.err, s, ex, false)
			if v.class != classUnknown || !v.mayHaveRun() {
				t.Fatalf("verdict %+v; want outcome unknown", v)
			}
			if v.sessionGone != tt.wantGone {
				t.Errorf("sessionGone %v, want %v", v.sessionGone, tt.wantGone)
			}
			if !strings.Contains(v.why, tt.wantWhy) {
				t.Errorf("why %q, want it to say %q", v.why, tt.wantWhy)
			}
		})
	}
}
