package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// Exchange records what the HTTP layer saw during one attempt of a call.
// mcp-go reports a 502 or a 429 only as the string "request failed with
// status N", so the status, and the Retry-After that goes with it, are taken
// here, from a RoundTripper around the shared HTTP client.
//
// An exchange is also the context its call's requests go out under: it adds
// itself as a value without a second allocation.
type Exchange struct {
	context.Context
	mu      sync.Mutex // guards the fields below but trace, ownTrace and first; a leaf
	rec     Record
	dialErr error // the first dial failure of this attempt
	trace   httptrace.ClientTrace
	// ownTrace: the exchange answers for httptrace's key itself (Bind).
	ownTrace bool
	// first is the guard of the call's first request, allocated with the
	// exchange; taken (under mu) says it is in use, and never again: a
	// guard lives as long as its answer's body, which may outlive the
	// attempt.
	first guard
	taken bool

	// What the guard (guard.go) saw during this attempt.
	refused error   // the first answer it refused, and why
	lastID  idToken // the id of the last request posted, for a stream resumed by GET
	hasID   bool
	// told, if hasTold, is the id of the next request posted, told by its
	// writer (Expect), so that the guard need not read it from the body.
	// An integer, written out when a request takes it: an idToken here
	// would take the client's callState (an Exchange and a lease) past
	// the 896-byte size class, 128 bytes more for every call
	// (TestExchangeSize).
	told    int64
	hasTold bool

	// Of the last request posted and the GETs that resume its stream
	// (F28): streamed, the server accepted it and began its answer as an
	// event stream, so it may have run whatever happens next; cut, that
	// stream broke before it ended.
	streamed, cut bool
	// accepted: a request of this attempt carrying the session id was
	// answered 2xx, so the server accepted the id (F26).
	accepted bool

	// rewrite, if set, is applied to each POST of the call before it goes
	// out (RewriteRequests); set before the first request, never after.
	rewrite Rewriter

	// pre: the next POST is answered with preResp and preErr without
	// being sent (Preanswer).
	pre     bool
	preResp *http.Response
	preErr  error
}

// Record is what the HTTP layer saw of the last request of an attempt.
type Record struct {
	Status     int           // of the response; 0 if none came
	RetryAfter time.Duration // from the response's Retry-After
	// Started: the request reached the HTTP client's transport; Traced:
	// that transport is net/http's, which reports through httptrace the
	// connection it takes, so no GotConn proves the request never left.
	Started, Traced bool
	GotConn         bool // the transport took a connection for the request
	Reused          bool // a pooled one
	// WithSession: the request carried an Mcp-Session-Id. RPCCode is the
	// code of the JSON-RPC error an answer of 400 or more carried, if
	// RPCError; which of them mean the session is gone is for the policy
	// (F26).
	WithSession bool
	RPCError    bool
	RPCCode     int
	// Body is the first bytes of an answer of 400 or more, for the call's
	// error (StatusError); EmptyBody says it had none at all.
	Body      string
	EmptyBody bool
}

// maxBodyInError bounds how much of an error answer's body a call's error
// quotes: enough for a proxy's one-line reason, not its HTML page.
const maxBodyInError = 200

// StatusError is what an HTTP status answered to a request says, when it
// is not a JSON-RPC answer: the status and the first bytes of its body.
// It is immutable.
type StatusError struct {
	Status int
	Body   string // the body's first bytes, up to 200
	Empty  bool   // the answer had no body at all
}

func (e *StatusError) Error() string {
	msg := "HTTP " + strconv.Itoa(e.Status)
	if text := http.StatusText(e.Status); text != "" {
		msg += " " + text
	}
	if e.Empty {
		return msg + " with an empty body"
	}
	return msg + ": " + strconv.Quote(e.Body)
}

// traceKey is the key under which httptrace keeps a context's ClientTrace.
// It is unexported; it is learnt once, by asking httptrace for the trace of
// a context that notes the key it is asked for. nil if httptrace ever asks
// otherwise: Bind then takes the ordinary way.
var traceKey = func() any {
	var k keyNoter
	httptrace.ContextClientTrace(&k)
	return k.key
}()

// keyNoter is a context that notes the last key it was asked for.
type keyNoter struct {
	context.Context
	key any
}

func (k *keyNoter) Value(key any) any {
	k.key = key
	return nil
}

// NewExchange returns an exchange for one call (or one request the client
// makes on its own); Bind puts it in the context its requests go out under.
func NewExchange() *Exchange {
	ex := new(Exchange)
	ex.Init()
	return ex
}

// Init readies a zero Exchange held in a value of the caller's (a call's
// state), which saves the caller an allocation. An exchange must not be
// copied once Init has run.
func (ex *Exchange) Init() {
	// The one hook, and the one allocation beside the exchange. When a
	// pooled connection turns out dead before a byte was written, net/http
	// takes another and calls it again.
	ex.trace.GotConn = func(info httptrace.GotConnInfo) {
		ex.mu.Lock()
		ex.rec.GotConn, ex.rec.Reused = true, info.Reused
		ex.mu.Unlock()
	}
}

type exchangeKey struct{}

// Bind returns ctx carrying ex and its trace, for every request sent
// under it. One per call, not per request: asking for the trace once here
// spares the RoundTripper a copy of each request. When ctx carries no trace
// of its own, the exchange answers for httptrace's key itself, which spares
// the call the context httptrace.WithClientTrace would add; when it does
// (otelhttp's, the caller's), httptrace composes the two.
func (ex *Exchange) Bind(ctx context.Context) context.Context {
	if traceKey != nil && httptrace.ContextClientTrace(ctx) == nil {
		ex.Context, ex.ownTrace = ctx, true
		return ex
	}
	ex.Context, ex.ownTrace = httptrace.WithClientTrace(ctx, &ex.trace), false
	return ex
}

// Value answers for exchangeKey, and for httptrace's if Bind said so, and
// passes every other key on. Done and the cancelCtx behind it pass through
// unchanged, so contexts derived from an exchange still hook into their
// parent without a goroutine.
func (ex *Exchange) Value(key any) any {
	switch {
	case key == (exchangeKey{}):
		return ex
	case ex.ownTrace && key == traceKey:
		return &ex.trace
	}
	return ex.Context.Value(key)
}

// newGuard returns the guard of a request sent under ex: the exchange's own
// for the first, a new one for any other.
func (ex *Exchange) newGuard() *guard {
	if ex == nil {
		return new(guard)
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.taken {
		return new(guard)
	}
	ex.taken = true
	return &ex.first
}

// A Rewriter rewrites the requests of a call on their way out.
type Rewriter interface {
	// RewriteRequest returns req, or a copy of it rewritten.
	RewriteRequest(req *http.Request) *http.Request
}

// RewriteRequests has every POST sent under ex pass through r first,
// before the guard reads its id: the call's progressToken goes in there.
// Call it before the first request; it lasts for every attempt. An
// interface rather than a func, so that a call's state can be its own
// rewriter without a method value's allocation.
func (ex *Exchange) RewriteRequests(r Rewriter) { ex.rewrite = r }

// Rewrites reports whether the requests sent under ex are rewritten
// (RewriteRequests).
func (ex *Exchange) Rewrites() bool { return ex.rewrite != nil }

// RequestID is the JSON-RPC id of the last request of this attempt that
// expected an answer, as it went on the wire (a number, or a quoted
// string), to tell the server which request a notifications/cancelled is
// about; false if none went out.
func (ex *Exchange) RequestID() (json.RawMessage, bool) {
	id, ok := ex.lastRequestID()
	if !ok {
		return nil, false
	}
	return json.RawMessage(bytes.Clone(id.bytes())), true
}

// ExchangeOf is the exchange ctx carries (Bind), nil if none.
func ExchangeOf(ctx context.Context) *Exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*Exchange)
	return ex
}

// Preanswer has the next POST sent under ex answered with resp or err, as
// the transport returned them to a request the client sent itself (its
// hot path for tools/call), without sending it again: so that mcp-go reads
// an answer the client leaves to it (an event stream, an error, a 404...)
// exactly as it reads every answer, on the one request that went out. What
// ex recorded of that request stays. err is the transport's error, not
// http.Client's (*url.Error, which the client adds again). ClearPreanswer
// ends it once mcp-go has had its turn.
func (ex *Exchange) Preanswer(resp *http.Response, err error) {
	ex.mu.Lock()
	ex.pre, ex.preResp, ex.preErr = true, resp, err
	ex.mu.Unlock()
}

// ClearPreanswer withdraws an answer Preanswer gave that no request took
// (mcp-go refused to send, for a session it knows ended), and closes its
// body.
func (ex *Exchange) ClearPreanswer() {
	ex.mu.Lock()
	resp := ex.preResp
	if !ex.pre {
		resp = nil
	}
	ex.pre, ex.preResp, ex.preErr = false, nil, nil
	ex.mu.Unlock()
	if resp != nil {
		resp.Body.Close()
	}
}

// Reset starts a new attempt.
func (ex *Exchange) Reset() {
	ex.mu.Lock()
	ex.rec, ex.dialErr = Record{}, nil
	ex.refused, ex.hasID, ex.hasTold = nil, false, false
	ex.streamed, ex.cut, ex.accepted = false, false, false
	ex.mu.Unlock()
}

// refuse records that the guard refused an answer: the first refusal of an
// attempt is what its failure means.
func (ex *Exchange) refuse(err error) {
	ex.mu.Lock()
	if ex.refused == nil {
		ex.refused = err
	}
	ex.mu.Unlock()
}

// Refusal is the answer the guard refused in this attempt, if any; nil for
// a nil exchange.
func (ex *Exchange) Refusal() error {
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
func (ex *Exchange) setLastRequestID(id idToken) {
	ex.mu.Lock()
	ex.lastID, ex.hasID, ex.refused = id, true, nil
	ex.mu.Unlock()
}

// Expect tells ex the id of the next request posted under it, from the
// caller that wrote the request with that id (the hot path,
// client/internal/hotpath): the guard checks the answer against it
// without reading the request's body. The next POST takes it, even one
// answered without being sent (Preanswer); Reset forgets it.
func (ex *Exchange) Expect(id int64) {
	ex.mu.Lock()
	ex.told, ex.hasTold = id, true
	ex.mu.Unlock()
}

// takeTold takes the id Expect told, written out as on the wire; ex.mu
// is held, and hasTold set.
func (ex *Exchange) takeTold() idToken {
	var t idToken
	t.n = uint8(len(strconv.AppendInt(t.b[:0], ex.told, 10)))
	ex.hasTold = false
	return t
}

func (ex *Exchange) lastRequestID() (idToken, bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.lastID, ex.hasID
}

// Snapshot is what the last request saw; nothing for a nil exchange (an
// error met outside a call, such as while restoring a session).
func (ex *Exchange) Snapshot() Record {
	if ex == nil {
		return Record{}
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.rec
}

// Stream reports whether the last request posted was answered with an
// event stream, and whether that stream was cut (F28).
func (ex *Exchange) Stream() (streamed, cut bool) {
	if ex == nil {
		return false, false
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.streamed, ex.cut
}

// SessionAccepted reports whether the server answered a request of the
// attempt that carried the session id with a 2xx.
func (ex *Exchange) SessionAccepted() bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.accepted
}

// streamCut records that the event stream answering the last request broke
// before it ended.
func (ex *Exchange) streamCut() {
	ex.mu.Lock()
	ex.cut = true
	ex.mu.Unlock()
}

// deleteTimeout bounds the DELETE that ends a session. mcp-go gives it five
// seconds of its own context; a server that does not answer must not hold up
// Close, or a replaced session's release, that long.
const deleteTimeout = time.Second

// Tracker is the RoundTripper every session's HTTP client goes through, the
// top of the chain (Chain): it records each request's outcome in the
// exchange of its context and guards its answer. It is safe for concurrent
// use; its fields are set by Chain.Build, before its first request, and
// never after.
type Tracker struct {
	next   http.RoundTripper
	traced bool // next is net/http's Transport, which reports to httptrace
	// For the guard (guard.go). Zero values: the default limit, no logs,
	// no counting.
	Limit        int64 // WithMaxResponseBytes
	Log          *slog.Logger
	WrongAnswers *atomic.Uint64
}

// StreamWatcher is told the status of every GET (the event stream, or a
// response stream resumed) sent under a context from WatchStream outside
// any exchange.
type StreamWatcher interface{ Answered(status int) }

type streamKey struct{}

// WatchStream returns ctx carrying w.
func WatchStream(ctx context.Context, w StreamWatcher) context.Context {
	return context.WithValue(ctx, streamKey{}, w)
}

func (t *Tracker) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Response != nil {
		// A redirect, carrying copies of the first request's headers.
		req = withoutCredentials(req)
	}
	if req.Method == http.MethodDelete {
		ctx, cancel := context.WithTimeout(req.Context(), deleteTimeout)
		defer cancel()
		return t.next.RoundTrip(req.WithContext(ctx))
	}
	ex, _ := req.Context().Value(exchangeKey{}).(*Exchange)
	if ex == nil && unguarded(req) {
		return t.next.RoundTrip(req)
	}
	if ex == nil {
		resp, _, err := t.guarded(req, nil, nil)
		if w, ok := req.Context().Value(streamKey{}).(StreamWatcher); ok && err == nil && req.Method == http.MethodGet {
			w.Answered(resp.StatusCode)
		}
		return resp, err
	}
	if ex.rewrite != nil && req.Method == http.MethodPost {
		req = ex.rewrite.RewriteRequest(req)
	}
	ex.mu.Lock()
	var told *idToken // the request's id, as its writer told it (Expect)
	if req.Method == http.MethodPost && ex.hasTold {
		t := ex.takeTold()
		told = &t
	}
	if ex.pre && req.Method == http.MethodPost {
		// Answered already (Preanswer): the request went out once.
		resp, err := ex.preResp, ex.preErr
		ex.pre, ex.preResp, ex.preErr = false, nil, nil
		ex.mu.Unlock()
		if req.Body != nil {
			req.Body.Close()
		}
		return resp, err
	}
	dialErr := ex.dialErr
	// What is recorded describes the last request only: one attempt may
	// send several (mcp-go's Initialize sends server/discover, then
	// initialize), and an earlier answer must not be read as this one's.
	// Only a GET resuming the last request's stream keeps what was
	// learnt of that stream.
	ex.rec = Record{Started: true, Traced: t.traced, WithSession: len(req.Header[sessionHeader]) > 0}
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
	resp, sse, err := t.guarded(req, ex, told)
	if err != nil {
		ex.mu.Lock()
		if IsDialError(err) {
			ex.dialErr = err
		}
		ex.mu.Unlock()
		return nil, err
	}
	var head errorHead
	if resp.StatusCode >= 400 {
		head = readErrorHead(resp)
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.rec.Status = resp.StatusCode
	ex.rec.RPCCode, ex.rec.RPCError = head.code, head.rpcError
	ex.rec.Body, ex.rec.EmptyBody = head.body, head.empty
	if resp.StatusCode >= 300 {
		// Read only off the failure path: a success needs no date parsed.
		ex.rec.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if resp.StatusCode < 300 {
		ex.accepted = ex.accepted || ex.rec.WithSession
		ex.streamed = ex.streamed || sse && req.Method == http.MethodPost
	}
	return resp, nil
}

// sessionHeader is Mcp-Session-Id as net/http keys it.
var sessionHeader = http.CanonicalHeaderKey(transport.HeaderKeySessionID)

// maxErrorBody bounds how much of an error answer is read ahead to find
// its JSON-RPC error: such answers are a line or two.
const maxErrorBody = 4 << 10

// errorHead is what the start of an error answer's body says.
type errorHead struct {
	code     int
	rpcError bool
	body     string
	empty    bool
}

// readErrorHead reads the start of an answer of 400 or more, its JSON-RPC
// error code if it carries one, and puts back what it read for mcp-go.
// Only failures pay for it.
func readErrorHead(resp *http.Response) errorHead {
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	h := errorHead{body: string(head[:min(len(head), maxBodyInError)]), empty: len(head) == 0 && err == nil}
	if err != nil {
		return h
	}
	var msg struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(head, &msg) == nil && msg.Error != nil {
		h.code, h.rpcError = msg.Error.Code, true
	}
	return h
}

// guarded sends req with a guard (guard.go) on its answer, and reports
// whether the answer is an event stream. told is req's id as its writer
// told it (Expect); nil: the guard reads it from the body.
func (t *Tracker) guarded(req *http.Request, ex *Exchange, told *idToken) (*http.Response, bool, error) {
	g := ex.newGuard()
	g.t, g.ex, g.limit = t, ex, t.Limit
	if g.limit <= 0 {
		g.limit = DefaultMaxResponseBytes
	}
	g.expect(req, told)
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, false, err
	}
	g.watch(resp)
	return resp, g.sse, nil
}

// refused logs and counts an answer the guard refused.
func (t *Tracker) refused(err error) {
	var wrong *WrongAnswerError
	if errors.As(err, &wrong) {
		if t.WrongAnswers != nil {
			t.WrongAnswers.Add(1)
		}
		if t.Log != nil {
			t.Log.Warn("answer for another request: the session is treated as corrupt and replaced", "response_id", wrong.Got, "request_id", wrong.Want)
		}
		return
	}
	if t.Log != nil {
		t.Log.Warn("answer refused", "err", err)
	}
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// wrapped transport.
func (t *Tracker) CloseIdleConnections() { closeIdle(t.next) }

// ParseRetryAfter reads delay-seconds or an HTTP-date; 0 if absent or bad.
func ParseRetryAfter(v string, now time.Time) time.Duration {
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
