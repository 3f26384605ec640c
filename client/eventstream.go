package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// This file keeps a session era's GET event stream, which carries the
// server's notifications to an idle client, working across what the
// server does to it: a stream that meets 404 or 400 once it has worked
// means the server forgot the session, and nothing else would notice until
// a call or a probe (F27); a stream wanted only after the session opened is
// opened then (F32).

// streamWatch follows one session's event stream from the tracker: mcp-go's
// listener, or the client's own (listenLate), sends its GETs under a context
// that carries it. It is safe for concurrent use.
type streamWatch struct {
	c       *ResilientClient
	session atomic.Pointer[session] // set once the session is made; nil before
	opened  atomic.Bool             // the server accepted the stream once
	fired   atomic.Bool             // the loss was reported
	asking  atomic.Bool             // a refusal from the start is being checked with a probe
	asked   atomic.Bool             // the probe found the session alive: the server does not offer the stream
}

// errEventStreamGone is the loss of a session whose event stream the
// server stopped knowing.
var errEventStreamGone = errors.New("the server no longer knows the session: its event stream was refused")

// Answered is told by the tracker of each answer to the stream's GET, and
// carries out what the policy says a refusal means (policy.StreamRefused):
// when the server lost the session, the session is taken out of service
// and a new one opened in the background, which restores the
// subscriptions and opens its own stream, with no call made; when the
// stream was refused from the start, the session is asked once with a
// probe, and replaced only if the probe says the server forgot it, so that
// no loop of new sessions follows.
func (w *streamWatch) Answered(status int) {
	if policy.StreamOpened(status) {
		w.opened.Store(true)
		return
	}
	refusal := policy.StreamRefused(status, w.opened.Load())
	if refusal == policy.StreamServed {
		return
	}
	s := w.session.Load()
	if s == nil || w.fired.Load() {
		return
	}
	if refusal == policy.StreamAskSession && !w.forgotten(s) {
		return
	}
	if !w.fired.CompareAndSwap(false, true) {
		return
	}
	err := fmt.Errorf("%w (%d)", errEventStreamGone, status)
	if w.c.pool.DiscardValue(s, &lostError{kind: policy.LossExpired, err: err}) {
		w.c.log.Info("event stream refused: re-initializing in the background", "member", s.member, "status", status)
	}
}

// forgotten asks the server, with a probe of the session, whether it still
// knows a session whose stream it refused from the start. The probe runs
// on the stream's goroutine, which waits for it (bounded by the probe
// timeout and Close) before it asks for the stream again; one at a time,
// and never again once the server answered it: a server that knows the
// session and refuses its stream costs one probe per session.
func (w *streamWatch) forgotten(s *session) bool {
	if w.asked.Load() || !w.asking.CompareAndSwap(false, true) {
		return false
	}
	defer w.asking.Store(false)
	ctx, cancel := context.WithTimeout(w.c.lifetime, w.c.opts.probeTimeout())
	defer cancel()
	err := w.c.checkSession(ctx, s)
	var pe *probeError
	switch {
	case err == nil:
		w.asked.Store(true)
		return false
	case errors.As(err, &pe) && policy.ProbeLoss(pe.verdict) == policy.LossExpired:
		return true
	}
	// Unreachable, busy, or an error that says nothing of the session:
	// the next refusal asks again.
	return false
}

// watchStream returns the context a session's event stream requests go out
// under, and its watch.
func (c *ResilientClient) watchStream(ctx context.Context) (context.Context, *streamWatch) {
	w := &streamWatch{c: c}
	return wire.WatchStream(ctx, w), w
}

// listenLate opens the event stream of a session-era session that was
// opened without one, once it is wanted: a handler registered, or a
// subscription made, after the session opened (F32). mcp-go decides on a
// transport's stream when the transport is made, so the client reads this
// one itself. The session's close ends it.
func (c *ResilientClient) listenLate(s *session) {
	if !s.sessionEra || !c.wantsEventStream() || s.listening.Swap(true) {
		return
	}
	s.listeners.Add(1)
	go func() {
		defer s.listeners.Done()
		ctx := wire.WatchStream(s.ctx, s.stream)
		pauses := c.opts.newBackOff()
		for {
			err := c.readEventStream(ctx, s)
			if ctx.Err() != nil || errors.Is(err, transport.ErrGetMethodNotAllowed) {
				return
			}
			pause := pauses.NextBackOff()
			c.log.Debug("event stream ended; opening it again", "err", err, "pause", pause)
			if wait.Sleep(ctx, pause, nil) != wait.Elapsed {
				return
			}
		}
	}()
}

// readEventStream opens s's GET event stream and hands what it carries to
// the client until it ends.
func (c *ResilientClient) readEventStream(ctx context.Context, s *session) error {
	resp, err := c.sessionRequest(ctx, s, http.MethodGet, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusMethodNotAllowed:
		return transport.ErrGetMethodNotAllowed
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("event stream: status %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	// The guard bounds the body already; one event up to the same limit.
	lines.Buffer(nil, int(min(c.opts.maxResponseBytes, 1<<30))+1)
	var data []byte
	for lines.Scan() {
		line := lines.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				c.streamMessage(ctx, s, data)
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
	}
	return lines.Err()
}

// streamMessage handles one message of a stream the client reads itself.
// Notifications go to the handlers. A session opened without the stream
// declared nothing the server may ask of it (sampling, roots, elicitation
// would have opened the stream at once), so of the server's requests only
// ping is answered; the others are refused as mcp-go refuses a method it
// has no handler for.
func (c *ResilientClient) streamMessage(ctx context.Context, s *session, data []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.Method == "" {
		return
	}
	if len(msg.ID) == 0 || string(msg.ID) == "null" {
		var n mcp.JSONRPCNotification
		if json.Unmarshal(data, &n) == nil {
			c.onServerNotification(n)
		}
		return
	}
	reply := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{}}`
	if msg.Method != string(mcp.MethodPing) {
		reply = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32601,"message":"method not found"}}`
	}
	resp, err := c.sessionRequest(ctx, s, http.MethodPost, []byte(reply))
	if err == nil {
		resp.Body.Close()
	}
}

// sessionRequest sends a request on s as its mcp-go transport would: with
// its session id, protocol version and the caller's headers, through the
// client's HTTP client (its token, its guard).
func (c *ResilientClient) sessionRequest(ctx context.Context, s *session, method string, body []byte) (*http.Response, error) {
	var content io.Reader // none for a GET: net/http sends no body then
	if body != nil {
		content = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint, content)
	if err != nil {
		return nil, err
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	req.Header.Set(transport.HeaderKeySessionID, s.mc.GetSessionId())
	req.Header.Set(transport.HeaderKeyProtocolVersion, s.version)
	for k, v := range c.opts.headers {
		req.Header.Set(k, v)
	}
	if c.opts.headerFunc != nil {
		for k, v := range c.opts.headerFunc(ctx) {
			req.Header.Set(k, v)
		}
	}
	return c.httpClient.Do(req)
}
