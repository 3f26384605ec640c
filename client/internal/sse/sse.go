// Package sse is the HTTP+SSE transport of MCP protocol revision 2024-11-05
// (deprecated in 2025-03-26, still spoken by many servers): one GET event
// stream per session, which names in its first event, "endpoint", the URL
// the client POSTs its messages to; every answer, notification and request
// of the server's comes back on the stream.
//
// It is an mcp-go transport (transport.Interface, BidirectionalInterface),
// written here rather than taken from mcp-go's transport.SSE, because the
// client's policy needs what that one does not report (docs/sse.md):
//
//   - the stream is the session: when it ends, is reset or fails, the
//     session is lost (Config.OnLost), the requests whose answers were due
//     on it fail at once as answers lost with their stream (mcp-go's wait
//     for their timeout), and nothing more is POSTed to its endpoint;
//   - requests from the server (sampling, roots, elicitation, ping) are
//     read as requests and answered (mcp-go's takes any message with an id
//     for an answer);
//   - request ids are unique beyond the session: a random prefix per
//     transport, so that a gateway which sends every client's messages to
//     every stream cannot match another client's answer to our call; an
//     answer to an id we did not send is dropped and counted;
//   - the endpoint must be on the stream's origin (scheme, host and port):
//     one on another is refused at once (mcp-go's compares the host only,
//     logs, and waits for its timeout);
//   - an event over the size limit is read no further: the call it answers
//     fails with ErrResponseTooLarge if its id came first, else the stream
//     is dropped.
//
// The HTTP client given is the client's own chain (token, credentials,
// observers, the guard): the GET and the POSTs go through it as every
// request of a Streamable HTTP session does.
package sse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// Config is what a Transport is made of. Its fields are read, never
// written, by the Transport.
type Config struct {
	URL        *url.URL                                // the stream's URL
	Client     *http.Client                            // every request goes through it
	Headers    map[string]string                       // on every request
	HeaderFunc func(context.Context) map[string]string // on every request
	Limit      int64                                   // the largest event's data; wire.DefaultMaxResponseBytes if not positive
	Log        *slog.Logger
	// Unmatched counts answers to ids this transport did not send, or no
	// longer waits for; nil: not counted.
	Unmatched *atomic.Uint64
}

// Transport is one session of the HTTP+SSE transport. It is safe for
// concurrent use. mu is a leaf lock: no request is sent, and no handler
// run, under it.
type Transport struct {
	cfg    Config
	prefix string // of every request id it sends

	ctx    context.Context // ends at Close; the stream and the server's requests run under it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the stream's reader and the server's requests being answered

	endpoint atomic.Pointer[url.URL] // where messages go, once the stream named it
	version  atomic.Value            // string: the negotiated protocol version

	mu        sync.Mutex
	pending   map[string]*pending // by the id as sent
	lost      error               // why the stream ended; nil while it lives
	lostCh    chan struct{}       // closed when lost is set
	lostCtx   context.Context     // ends when lost is set
	lostEnd   context.CancelFunc
	onLost    func(error)
	onNotify  func(mcp.JSONRPCNotification)
	onRequest transport.RequestHandler
	seq       uint64 // the last id's number

	served atomic.Bool // an answer came on the stream
}

type pending struct {
	id mcp.RequestId // the caller's
	ch chan *transport.JSONRPCResponse
}

var (
	_ transport.BidirectionalInterface = (*Transport)(nil)
	_ transport.HTTPConnection         = (*Transport)(nil)
)

// New returns a transport that opens its stream on Start.
func New(cfg Config) *Transport {
	if cfg.Limit <= 0 {
		cfg.Limit = wire.DefaultMaxResponseBytes
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	t := &Transport{cfg: cfg, prefix: hex.EncodeToString(b[:]) + "-", pending: make(map[string]*pending), lostCh: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.lostCtx, t.lostEnd = context.WithCancel(context.Background())
	return t
}

// EndpointError is the failure of a stream whose endpoint event names
// another origin than the stream's (a server that would send the client's
// calls, and the credentials on them, elsewhere), or no URL at all.
// Nothing is sent to it, and opening the stream again would get the same.
type EndpointError struct {
	Stream, Endpoint string
	Err              error // the URL's parse error, if it is none
}

func (e *EndpointError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("the server's endpoint event is not a URL (%v): refused", e.Err)
	}
	return fmt.Sprintf("the server's endpoint event names %q, not on the origin of the stream %q: refused, nothing sent to it", e.Endpoint, e.Stream)
}

func (e *EndpointError) Unwrap() error { return e.Err }

// LostError is why a session's stream was lost: it ended, broke, or
// carried an event over the limit.
type LostError struct{ Err error }

func (e *LostError) Error() string {
	if errors.Is(e.Err, io.EOF) {
		return "the server ended the event stream (HTTP+SSE: the session is gone)"
	}
	return "the event stream broke (HTTP+SSE: the session is gone): " + e.Err.Error()
}
func (e *LostError) Unwrap() error { return e.Err }

// errClosed is what Close makes of the requests it interrupts.
var errClosed = errors.New("transport closed")

// SetLostHandler sets what is told, once, of the stream's loss: not of
// Close.
func (t *Transport) SetLostHandler(f func(error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onLost = f
}

// Lost reports why the stream was lost, nil while it lives.
func (t *Transport) Lost() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost
}

// Served reports whether the server has answered a request on the
// stream: it accepted the session.
func (t *Transport) Served() bool { return t.served.Load() }

// Start opens the stream and waits, within ctx, for its endpoint event.
func (t *Transport) Start(ctx context.Context) error {
	// The stream outlives Start: it runs under the transport's context,
	// and Start's ends only the wait.
	// Unguarded: the reader bounds each event itself, and can tell which
	// call an answer over the limit was for (readEvents).
	req, err := http.NewRequestWithContext(wire.Unguarded(t.ctx), http.MethodGet, t.cfg.URL.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	t.setHeaders(ctx, req)
	stop := context.AfterFunc(ctx, t.cancel) // a Start abandoned is a transport given up
	resp, err := t.cfg.Client.Do(req)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("opening the event stream: %w", ctx.Err())
		}
		return fmt.Errorf("opening the event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			return &transport.AuthorizationRequiredError{}
		}
		return &StatusError{Status: resp.StatusCode}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return &NotEventStreamError{ContentType: resp.Header.Get("Content-Type")}
	}
	named := make(chan error, 1)
	t.wg.Add(1)
	go t.read(resp.Body, named)
	select {
	case err := <-named:
		return err
	case <-ctx.Done():
		t.cancel()
		return fmt.Errorf("no endpoint event on the stream before the handshake's deadline: %w", ctx.Err())
	}
}

// StatusError is a GET of the stream answered with another status than
// 200.
type StatusError struct{ Status int }

func (e *StatusError) Error() string {
	return "the event stream was answered HTTP " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status)
}

// NotEventStreamError is a GET of the stream answered 200 with something
// else than an event stream: not an HTTP+SSE endpoint.
type NotEventStreamError struct{ ContentType string }

func (e *NotEventStreamError) Error() string {
	return fmt.Sprintf("the stream's URL answered %q, not text/event-stream: not an HTTP+SSE endpoint", e.ContentType)
}

// read reads the stream until it ends, telling named of the endpoint
// event (or of the failure before it).
func (t *Transport) read(body io.ReadCloser, named chan<- error) {
	defer t.wg.Done()
	defer body.Close()
	var first bool
	err := readEvents(body, t.cfg.Limit, t.tooLarge, func(event string, data []byte) error {
		if event == "endpoint" {
			if first {
				t.cfg.Log.Warn("a second endpoint event on the stream: ignored", "endpoint", string(data))
				return nil
			}
			first = true
			ep, err := t.endpointOf(string(data))
			if err != nil {
				named <- err
				return err
			}
			t.endpoint.Store(ep)
			named <- nil
			return nil
		}
		if !first {
			// A message before the endpoint: nowhere to answer it yet.
			return nil
		}
		if event == "" || event == "message" {
			t.dispatch(data)
		}
		return nil
	})
	if !first {
		if errors.Is(err, io.EOF) {
			err = errors.New("the event stream ended before its endpoint event")
		}
		named <- err
	}
	if t.ctx.Err() != nil {
		err = errClosed
	}
	t.lose(&LostError{Err: err})
}

// endpointOf is the endpoint an endpoint event names, resolved against
// the stream's URL, if it is on the stream's origin.
func (t *Transport) endpointOf(data string) (*url.URL, error) {
	ep, err := t.cfg.URL.Parse(strings.TrimSpace(data))
	if err != nil {
		return nil, &EndpointError{Stream: t.cfg.URL.String(), Err: err}
	}
	if ep.Scheme != t.cfg.URL.Scheme || ep.Host != t.cfg.URL.Host || ep.User != nil {
		e := &EndpointError{Stream: t.cfg.URL.String(), Endpoint: ep.Redacted()}
		t.cfg.Log.Error("endpoint on another origin refused", "stream", e.Stream, "endpoint", e.Endpoint)
		return nil, e
	}
	return ep, nil
}

// lose records the stream's end (the first cause wins), fails what waits
// for an answer, and tells OnLost, unless the transport was closed.
func (t *Transport) lose(cause error) {
	t.mu.Lock()
	if t.lost != nil {
		t.mu.Unlock()
		return
	}
	t.lost = cause
	onLost := t.onLost
	t.mu.Unlock()
	if onLost != nil && !errors.Is(cause, errClosed) {
		// Before the calls learn: the session is out of service by the
		// time they look for another.
		onLost(cause)
	}
	t.lostEnd()
	close(t.lostCh)
}

// tooLarge is what an event over the limit means, given the first limit
// bytes of its data: if they name a request this transport waits for, its
// call fails with ErrResponseTooLarge (it ran; the same answer would come
// back) and the rest of the event is skipped, the session kept; else the
// stream is dropped, and the session with it, since whose answer it was
// cannot be told (the TypeScript SDK writes the id after the result).
func (t *Transport) tooLarge(prefix []byte) bool {
	var key string
	if id := wire.AnswerID(prefix); id == nil || json.Unmarshal(id, &key) != nil {
		return false
	}
	t.mu.Lock()
	p := t.pending[key]
	delete(t.pending, key)
	t.mu.Unlock()
	if p == nil {
		return false
	}
	t.cfg.Log.Warn("an answer over the limit: skipped, its call fails", "limit", t.cfg.Limit)
	p.ch <- answerTooLarge
	return true
}

// answerTooLarge is delivered in place of an answer over the limit.
var answerTooLarge = new(transport.JSONRPCResponse)

// message is any JSON-RPC message, as read to route it.
type message struct {
	ID     json.RawMessage          `json:"id"`
	Method string                   `json:"method"`
	Params json.RawMessage          `json:"params"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

// dispatch routes one message of the stream: an answer to its request, a
// notification to the handler, a request of the server's to the request
// handler, on a goroutine of its own.
func (t *Transport) dispatch(data []byte) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		t.cfg.Log.Warn("a message on the event stream is not JSON-RPC: skipped", "err", err)
		return
	}
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	switch {
	case m.Method != "" && hasID:
		t.serve(m, data)
	case m.Method != "":
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(data, &n); err != nil {
			return
		}
		t.mu.Lock()
		h := t.onNotify
		t.mu.Unlock()
		if h != nil {
			h(n)
		}
	case hasID:
		t.answer(m)
	}
}

// answer delivers an answer to the request it names, if this transport
// sent it and still waits for it.
func (t *Transport) answer(m message) {
	var key string
	if json.Unmarshal(m.ID, &key) == nil && strings.HasPrefix(key, t.prefix) {
		t.mu.Lock()
		p := t.pending[key]
		delete(t.pending, key)
		t.mu.Unlock()
		if p != nil {
			t.served.Store(true)
			p.ch <- &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: p.id, Result: m.Result, Error: m.Error}
			return
		}
	}
	if t.cfg.Unmatched != nil {
		t.cfg.Unmatched.Add(1)
	}
	t.cfg.Log.Debug("an answer to a request this session did not send, or no longer waits for: dropped", "id", string(m.ID))
}

// serve answers a request of the server's with the request handler, on a
// goroutine Close waits for.
func (t *Transport) serve(m message, data []byte) {
	var req transport.JSONRPCRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return
	}
	req.Params = m.Params
	t.mu.Lock()
	h := t.onRequest
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		var resp *transport.JSONRPCResponse
		var err error
		if h == nil {
			err = errors.New("no handler for the server's requests")
		} else {
			resp, err = h(t.ctx, req)
		}
		if err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
		}
		if resp == nil {
			return
		}
		body, err := json.Marshal(resp)
		if err != nil {
			return
		}
		if _, err := t.post(t.ctx, body); err != nil {
			t.cfg.Log.Debug("answering the server's request failed", "method", req.Method, "err", err)
		}
	}()
}

// SendRequest POSTs request to the endpoint, under an id of the
// transport's, and waits for its answer on the stream.
func (t *Transport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	p := &pending{id: request.ID, ch: make(chan *transport.JSONRPCResponse, 1)}
	t.mu.Lock()
	if t.lost != nil {
		lost := t.lost
		t.mu.Unlock()
		// Nothing was written: the request did not run.
		return nil, &wire.UnwrittenError{Err: lost}
	}
	t.seq++
	key := t.prefix + strconv.FormatUint(t.seq, 10)
	t.pending[key] = p
	t.mu.Unlock()
	drop := func() {
		t.mu.Lock()
		delete(t.pending, key)
		t.mu.Unlock()
	}
	wireReq := request
	wireReq.ID = mcp.NewRequestId(key)
	body, err := json.Marshal(wireReq)
	if err != nil {
		drop()
		return nil, err
	}
	if _, err := t.post(ctx, body); err != nil {
		drop()
		return nil, err
	}
	select {
	case resp := <-p.ch:
		if resp == answerTooLarge {
			wire.RefuseEventTooLarge(ctx, t.cfg.Limit)
			return nil, fmt.Errorf("answer over the limit of %d bytes (WithMaxResponseBytes)", t.cfg.Limit)
		}
		return resp, nil
	case <-t.lostCh:
		drop()
		select {
		case resp := <-p.ch: // it came before the end
			if resp == answerTooLarge {
				wire.RefuseEventTooLarge(ctx, t.cfg.Limit)
				return nil, fmt.Errorf("answer over the limit of %d bytes (WithMaxResponseBytes)", t.cfg.Limit)
			}
			return resp, nil
		default:
		}
		// Accepted, and its answer was due on the stream that is gone: it
		// may have run.
		wire.MarkStreamCut(ctx)
		return nil, t.Lost()
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

// post sends one message to the endpoint. A POST in flight when the
// stream is lost is given up: the server that would answer it is gone
// (and one restarted may never answer a POST to a session it does not
// know: server-everything's SSE mode does not).
func (t *Transport) post(ctx context.Context, body []byte) (int, error) {
	ep := t.endpoint.Load()
	if ep == nil {
		return 0, &wire.UnwrittenError{Err: errors.New("no endpoint yet")}
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(t.lostCtx, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.String(), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if v, _ := t.version.Load().(string); v != "" {
		req.Header.Set(transport.HeaderKeyProtocolVersion, v)
	}
	t.setHeaders(ctx, req)
	resp, err := t.cfg.Client.Do(req)
	if err != nil {
		if lost := t.Lost(); lost != nil && parent.Err() == nil && ctx.Err() != nil {
			// Cut by the stream's loss: the server may have read it.
			wire.MarkStreamCut(parent)
			return 0, fmt.Errorf("%w (while the request was being sent)", lost)
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp.StatusCode, nil
	case resp.StatusCode == http.StatusNotFound:
		// The session is gone (a restarted server): the policy reads the
		// status, and mcp-go's own value says so.
		return resp.StatusCode, fmt.Errorf("%w: HTTP 404 to a POST on the session's endpoint", transport.ErrSessionTerminated)
	case resp.StatusCode == http.StatusUnauthorized:
		return resp.StatusCode, &transport.AuthorizationRequiredError{}
	}
	return resp.StatusCode, fmt.Errorf("request failed with status %d", resp.StatusCode)
}

func (t *Transport) setHeaders(ctx context.Context, req *http.Request) {
	for k, v := range t.cfg.Headers {
		req.Header.Set(k, v)
	}
	if t.cfg.HeaderFunc != nil {
		for k, v := range t.cfg.HeaderFunc(ctx) {
			req.Header.Set(k, v)
		}
	}
}

// SendNotification POSTs a notification to the endpoint.
func (t *Transport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	if lost := t.Lost(); lost != nil {
		return &wire.UnwrittenError{Err: lost}
	}
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	_, err = t.post(ctx, body)
	return err
}

// SetNotificationHandler sets what the server's notifications go to.
func (t *Transport) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onNotify = h
}

// SetRequestHandler sets what answers the server's requests.
func (t *Transport) SetRequestHandler(h transport.RequestHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onRequest = h
}

// SetProtocolVersion sets the version sent in MCP-Protocol-Version.
func (t *Transport) SetProtocolVersion(v string) { t.version.Store(v) }

// GetSessionId is the session id the endpoint carries (its sessionId or
// session_id parameter), "" if none.
func (t *Transport) GetSessionId() string {
	ep := t.endpoint.Load()
	if ep == nil {
		return ""
	}
	q := ep.Query()
	if id := q.Get("sessionId"); id != "" {
		return id
	}
	return q.Get("session_id")
}

// Close ends the stream, fails what waits for an answer, and returns once
// the transport's goroutines have ended.
func (t *Transport) Close() error {
	t.cancel()
	t.lose(&LostError{Err: errClosed})
	t.wg.Wait()
	return nil
}

// readEvents reads an event stream's events, each handed to f with its
// name ("" if none) and its data; it returns f's error, or the stream's
// (io.EOF at its end). An event whose data, with the line being read,
// exceeds limit is read no further than the limit: tooLarge is given what
// was read of its data, and if it reports true the rest of the event is
// skipped (read and dropped, line by line) and the stream goes on; else
// the stream ends with wire.ErrResponseTooLarge. Memory is bounded by the
// limit either way.
func readEvents(r io.Reader, limit int64, tooLarge func(prefix []byte) bool, f func(event string, data []byte) error) error {
	br := bufio.NewReaderSize(r, 4<<10)
	var event string
	var data, line []byte
	hasData := false
	for {
		line = line[:0]
		over := false
		for {
			chunk, err := br.ReadSlice('\n')
			line = append(line, chunk...)
			if int64(len(line)+len(data)) > limit {
				over = true
				break
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
		if over {
			prefix := data
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if hasData {
					prefix = append(prefix, '\n')
				}
				prefix = append(prefix, bytes.TrimPrefix(v, []byte(" "))...)
			}
			if !tooLarge(prefix) {
				return &tooLargeError{limit: limit}
			}
			if err := skipEvent(br, line); err != nil {
				return err
			}
			event, data, line, hasData = "", nil, nil, false
			continue
		}
		l := bytes.TrimRight(line, "\r\n")
		switch {
		case len(l) == 0:
			if hasData {
				if err := f(event, data); err != nil {
					return err
				}
			}
			event, data, hasData = "", data[:0], false
		case l[0] == ':':
			// A comment: a server's heartbeat.
		default:
			name, value, _ := bytes.Cut(l, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(name) {
			case "event":
				event = string(value)
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data, hasData = append(data, value...), true
			}
		}
	}
}

// skipEvent reads the rest of an event, after line, its last bytes read,
// up to the blank line that ends it.
func skipEvent(br *bufio.Reader, line []byte) error {
	atLineStart := len(line) > 0 && line[len(line)-1] == '\n'
	for {
		chunk, err := br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return err
		}
		if atLineStart && len(bytes.TrimRight(chunk, "\r\n")) == 0 && err == nil {
			return nil // the blank line
		}
		atLineStart = err == nil
	}
}

// tooLargeError is an event over the limit.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("an event of the stream is larger than the limit of %d bytes (WithMaxResponseBytes); the stream was dropped", e.limit)
}
func (e *tooLargeError) Is(target error) bool { return target == wire.ErrResponseTooLarge }
