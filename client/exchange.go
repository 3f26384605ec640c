package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// exchange records what the HTTP layer saw during one attempt of a call.
// mcp-go reports a 502 or a 429 only as the string "request failed with
// status N", so the status, and the Retry-After that goes with it, are taken
// here, from a RoundTripper around the shared HTTP client.
//
// An exchange is also the context its call's requests go out under: it adds
// itself as a value without a second allocation.
type exchange struct {
	context.Context
	mu      sync.Mutex
	rec     record
	dialErr error // the first dial failure of this attempt
	trace   httptrace.ClientTrace

	// What the guard (guard.go) saw during this attempt.
	refused error   // the first answer it refused, and why
	lastID  idToken // the id of the last request posted, for a stream resumed by GET
	hasID   bool

	// Of the last request posted and the GETs that resume its stream
	// (F28): streamed, the server accepted it and began its answer as an
	// event stream, so it may have run whatever happens next; cut, that
	// stream broke before it ended.
	streamed, cut bool
	// accepted: a request of this attempt carrying the session id was
	// answered 2xx, so the server accepted the id (F26).
	accepted bool
}

// record is what the HTTP layer saw of the last request of an attempt.
type record struct {
	status     int           // of the response; 0 if none came
	retryAfter time.Duration // from the response's Retry-After
	// started: the request reached the HTTP client's transport; traced:
	// that transport is net/http's, which reports through httptrace the
	// connection it takes, so no gotConn proves the request never left.
	started, traced bool
	gotConn         bool // the transport took a connection for the request
	reused          bool // a pooled one
	// withSession: the request carried an Mcp-Session-Id. rpcCode is the
	// code of the JSON-RPC error a 400 or 404 carried, if rpcError; which
	// of them mean the session is gone is for classify (F26).
	withSession bool
	rpcError    bool
	rpcCode     int
}

func newExchange() *exchange {
	ex := &exchange{}
	// The one hook, and the one allocation beside the exchange. When a
	// pooled connection turns out dead before a byte was written, net/http
	// takes another and calls it again.
	ex.trace.GotConn = func(info httptrace.GotConnInfo) {
		ex.mu.Lock()
		ex.rec.gotConn, ex.rec.reused = true, info.Reused
		ex.mu.Unlock()
	}
	return ex
}

type exchangeKey struct{}

// context returns ctx carrying ex and its trace, for every request sent
// under it. One per call, not per request: asking for the trace once here
// spares the RoundTripper a copy of each request.
func (ex *exchange) context(ctx context.Context) context.Context {
	ex.Context = httptrace.WithClientTrace(ctx, &ex.trace)
	return ex
}

// Value answers for exchangeKey and passes every other key on. Done and the
// cancelCtx behind it pass through unchanged, so contexts derived from an
// exchange still hook into their parent without a goroutine.
func (ex *exchange) Value(key any) any {
	if key == (exchangeKey{}) {
		return ex
	}
	return ex.Context.Value(key)
}

// reset starts a new attempt.
func (ex *exchange) reset() {
	ex.mu.Lock()
	ex.rec, ex.dialErr = record{}, nil
	ex.refused, ex.hasID = nil, false
	ex.streamed, ex.cut, ex.accepted = false, false, false
	ex.mu.Unlock()
}

// refuse records that the guard refused an answer: the first refusal of an
// attempt is what its failure means.
func (ex *exchange) refuse(err error) {
	ex.mu.Lock()
	if ex.refused == nil {
		ex.refused = err
	}
	ex.mu.Unlock()
}

// refusal is the answer the guard refused in this attempt, if any; nil for
// a nil exchange.
func (ex *exchange) refusal() error {
	if ex == nil {
		return nil
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.refused
}

// setLastRequestID records that a request expecting an answer went out. A
// refusal describes the answer to the last such request: mcp-go's
// Initialize follows a failed server/discover with initialize, and the
// first's answer must not be read as the second's.
func (ex *exchange) setLastRequestID(id idToken) {
	ex.mu.Lock()
	ex.lastID, ex.hasID, ex.refused = id, true, nil
	ex.mu.Unlock()
}

func (ex *exchange) lastRequestID() (idToken, bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.lastID, ex.hasID
}

// snapshot is what the last request saw; nothing for a nil exchange (an
// error met outside a call, such as while restoring a session).
func (ex *exchange) snapshot() record {
	if ex == nil {
		return record{}
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.rec
}

// stream reports whether the last request posted was answered with an
// event stream, and whether that stream was cut (F28).
func (ex *exchange) stream() (streamed, cut bool) {
	if ex == nil {
		return false, false
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.streamed, ex.cut
}

// sessionAccepted reports whether the server answered a request of the
// attempt that carried the session id with a 2xx.
func (ex *exchange) sessionAccepted() bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.accepted
}

// streamCut records that the event stream answering the last request broke
// before it ended.
func (ex *exchange) streamCut() {
	ex.mu.Lock()
	ex.cut = true
	ex.mu.Unlock()
}

// deleteTimeout bounds the DELETE that ends a session. mcp-go gives it five
// seconds of its own context; a server that does not answer must not hold up
// Close, or a replaced session's release, that long.
const deleteTimeout = time.Second

// tracker is the RoundTripper every session's HTTP client goes through. It
// is safe for concurrent use.
type tracker struct {
	next   http.RoundTripper
	traced bool // next is net/http's Transport, which reports to httptrace
	// For the guard (guard.go). Zero values: the default limit, no logs,
	// no counting.
	limit        int64 // WithMaxResponseBytes
	log          *slog.Logger
	wrongAnswers *atomic.Uint64
}

func newTracker(next http.RoundTripper) *tracker {
	_, traced := next.(*http.Transport)
	return &tracker{next: next, traced: traced}
}

func (t *tracker) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Response != nil {
		// A redirect, carrying copies of the first request's headers.
		req = withoutCredentials(req)
	}
	if req.Method == http.MethodDelete {
		ctx, cancel := context.WithTimeout(req.Context(), deleteTimeout)
		defer cancel()
		return t.next.RoundTrip(req.WithContext(ctx))
	}
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		resp, _, err := t.guarded(req, nil)
		if w, ok := req.Context().Value(streamKey{}).(*streamWatch); ok && err == nil && req.Method == http.MethodGet {
			w.answered(resp.StatusCode)
		}
		return resp, err
	}
	ex.mu.Lock()
	dialErr := ex.dialErr
	// What is recorded describes the last request only: one attempt may
	// send several (mcp-go's Initialize sends server/discover, then
	// initialize), and an earlier answer must not be read as this one's.
	// Only a GET resuming the last request's stream keeps what was
	// learnt of that stream.
	ex.rec = record{started: true, traced: t.traced, withSession: len(req.Header[sessionHeader]) > 0}
	if req.Method == http.MethodPost {
		ex.streamed, ex.cut = false, false
	}
	ex.mu.Unlock()
	if dialErr != nil {
		// mcp-go follows a failed server/discover with initialize; when the
		// first could not even connect, the second would only double the
		// connection attempts a reconnect loop makes against a down server.
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, dialErr
	}
	resp, sse, err := t.guarded(req, ex)
	if err != nil {
		ex.mu.Lock()
		if isDialError(err) {
			ex.dialErr = err
		}
		ex.mu.Unlock()
		return nil, err
	}
	var rpcCode int
	var rpcError bool
	if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound {
		rpcCode, rpcError = readRPCError(resp)
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.rec.status = resp.StatusCode
	ex.rec.rpcCode, ex.rec.rpcError = rpcCode, rpcError
	if resp.StatusCode >= 300 {
		// Read only off the failure path: a success needs no date parsed.
		ex.rec.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if resp.StatusCode < 300 {
		ex.accepted = ex.accepted || ex.rec.withSession
		ex.streamed = ex.streamed || sse && req.Method == http.MethodPost
	}
	return resp, nil
}

// sessionHeader is Mcp-Session-Id as net/http keys it.
var sessionHeader = http.CanonicalHeaderKey(transport.HeaderKeySessionID)

// maxErrorBody bounds how much of a 400 or 404 is read to find its
// JSON-RPC error: such answers are a line or two.
const maxErrorBody = 4 << 10

// readRPCError reads the JSON-RPC error code of a 400 or 404 answer, if it
// carries one, and puts back what it read for mcp-go. Only failures pay for
// it.
func readRPCError(resp *http.Response) (code int, ok bool) {
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return 0, false
	}
	var msg struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(head, &msg) != nil || msg.Error == nil {
		return 0, false
	}
	return msg.Error.Code, true
}

// guarded sends req with a guard (guard.go) on its answer, and reports
// whether the answer is an event stream.
func (t *tracker) guarded(req *http.Request, ex *exchange) (*http.Response, bool, error) {
	g := &guard{t: t, ex: ex, limit: t.limit}
	if g.limit <= 0 {
		g.limit = defaultMaxResponseBytes
	}
	g.expect(req)
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, false, err
	}
	g.watch(resp)
	return resp, g.sse, nil
}

// refused logs and counts an answer the guard refused.
func (t *tracker) refused(err error) {
	var wrong *wrongAnswerError
	if errors.As(err, &wrong) {
		if t.wrongAnswers != nil {
			t.wrongAnswers.Add(1)
		}
		if t.log != nil {
			t.log.Warn("answer for another request: the session is treated as corrupt and replaced", "response_id", wrong.got, "request_id", wrong.want)
		}
		return
	}
	if t.log != nil {
		t.log.Warn("answer refused", "err", err)
	}
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// wrapped transport.
func (t *tracker) CloseIdleConnections() {
	if ci, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// isDialError reports whether err means no connection could be made, so the
// request was certainly not sent.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// parseRetryAfter reads delay-seconds or an HTTP-date; 0 if absent or bad.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// More seconds than a Duration holds would wrap around to a
		// negative pause: as good as forever, so the longest one.
		if err != nil || secs > uint64(math.MaxInt64/time.Second) {
			return math.MaxInt64
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
