package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// This file keeps a session era's GET event stream, which carries the
// server's notifications to an idle client, working across what the
// server does to it: a stream that meets 404 or 400 once it has worked
// means the session expired, and nothing else would notice until
// a call or a probe (F27); a stream wanted only after the session opened is
// opened then (F32).

// Watch follows one session's event stream: mcp-go's listener sends
// its GETs under a context that carries it, and the tracker tells it how
// the server answered (Answered); the client's own loop (listenLate) asks
// it directly. Either way the policy decides what follows (AfterStream),
// so that both loops do alike. It is safe for concurrent use.
type Watch struct {
	m       *Messages
	session atomic.Value // the Session, set once it is made (Streams.Watch); nil before
	// stop ends mcp-go's listener (its Start's context), when the policy
	// says the stream is not asked for again; set before the watch is
	// shared.
	stop   context.CancelFunc
	opened atomic.Bool // the server accepted the stream once
	fired  atomic.Bool // the loss was reported
	asking atomic.Bool // a refusal from the start is being checked with a probe
	asked  atomic.Bool // the probe found the session alive: the server does not offer the stream
}

// errEventStreamRefused is what an answer other than 200 to the event
// stream's GET is, with its status.
type errEventStreamRefused int

func (e errEventStreamRefused) Error() string {
	return fmt.Sprintf("the event stream was refused (%d)", int(e))
}

// Answered is told by the tracker of each answer to mcp-go's GET of the
// stream, and carries out what the policy says follows: when the server
// lost the session, the session is taken out of service and a new one
// opened in the background, which restores the subscriptions and opens its
// own stream, with no call made; when the server has no stream, or refused
// it for good, mcp-go's listener is stopped (it stops on 405 by itself, and
// would ask again every second for anything else); anything else mcp-go's
// listener asks for again, on its own schedule.
func (w *Watch) Answered(status int) {
	if policy.StreamOpened(status) {
		w.opened.Store(true)
		return
	}
	if w.fired.Load() {
		return
	}
	a := policy.AfterStream(w.verdict(policy.StreamAnswer{Status: status}))
	switch a.Next {
	case policy.StreamRenew:
		w.lost(a, errEventStreamRefused(status))
	case policy.StreamStop:
		w.m.host.Config().Log.Info("event stream not asked for again on this session", "why", a.Why, "status", status)
		if w.stop != nil {
			w.stop()
		}
	}
}

// verdict classifies a GET of the stream that did not open it (the
// policy's StreamVerdict), with what the watch knows of the session: a
// refusal from the start is first checked with a probe of the session.
func (w *Watch) verdict(ans policy.StreamAnswer) policy.Verdict {
	ans.OpenedBefore = w.opened.Load()
	if s, _ := w.session.Load().(Session); s != nil && ans.Status != 0 &&
		policy.StreamRefused(ans.Status, ans.OpenedBefore) == policy.StreamAskSession {
		ans.SessionAlive, ans.SessionExpired = w.ask(s)
	}
	return policy.StreamVerdict(ans)
}

// lost takes the watch's session out of service, once, as the policy said
// (a, a StreamRenew) for the refusal err.
func (w *Watch) lost(a policy.StreamAction, err error) {
	s, _ := w.session.Load().(Session)
	if s == nil || !w.fired.CompareAndSwap(false, true) {
		return
	}
	if w.m.host.Discard(s, a.Discard, fmt.Errorf("%s: %w", a.Why, err)) {
		w.m.host.Config().Log.Info("event stream refused: replacing the session in the background", "member", s.Member(), "why", a.Why, "err", err)
	}
}

// ask asks the server, with a probe of the session, whether it still knows
// a session whose stream it refused from the start: alive, it does;
// expired, it does not; neither, the probe could not tell. The probe runs
// on the stream's goroutine, which waits for it (bounded by the probe
// timeout and Close) before it decides; one at a time, and never again
// once the server answered it: a server that knows the session and
// refuses its stream costs one probe per session.
func (w *Watch) ask(s Session) (alive, expired bool) {
	if w.asked.Load() {
		return true, false
	}
	if !w.asking.CompareAndSwap(false, true) {
		return false, false
	}
	defer w.asking.Store(false)
	cfg := w.m.host.Config()
	ctx, cancel := context.WithTimeout(cfg.Lifetime, cfg.ProbeTimeout)
	defer cancel()
	v, judged, err := w.m.host.Probe(ctx, s)
	switch {
	case err == nil:
		w.asked.Store(true)
		return true, false
	case judged && policy.ProbeLoss(v) == policy.LossExpired:
		return false, true
	}
	// Unreachable, busy, or an error that says nothing of the session:
	// the next refusal asks again.
	return false, false
}

// WatchStream returns the context mcp-go's listener of a session's event
// stream runs under, made from ctx, and its watch. The context has ctx's
// values but does not end with it: the listener ends with the session's
// mcp-go client, which the session's close closes (as a failed handshake
// does), or when the watch stops it; a context that ended with ctx (the
// client's) would stay registered in it until Close, one per session ever
// opened.
func (m *Messages) WatchStream(ctx context.Context) (context.Context, *Watch) {
	w := &Watch{m: m}
	ctx, w.stop = context.WithCancel(context.WithoutCancel(ctx))
	return wire.WatchStream(ctx, w), w
}

// listenLate opens the event stream of a session-era session that was
// opened without one, once it is wanted: a handler registered, or a
// subscription made, after the session opened (F32). mcp-go decides on a
// transport's stream when the transport is made, so the client reads this
// one itself, and asks the policy what follows each end of it, as the
// watch does for mcp-go's. The session's close ends it.
func (m *Messages) listenLate(s Session) {
	st := s.Streams()
	if !s.SessionEra() || !m.WantsEventStream() || st.listening.Swap(true) {
		return
	}
	st.loops.Add(1)
	cfg := m.host.Config()
	go func() {
		defer st.loops.Done()
		retries := policy.StreamRetries{NewBackOff: cfg.NewBackOff}
		ctx := s.Context()
		for {
			end, err := m.readEventStream(ctx, s)
			if ctx.Err() != nil {
				return
			}
			a := retries.After(end)
			switch a.Next {
			case policy.StreamRenew:
				st.watch.lost(a, err)
				return
			case policy.StreamStop:
				cfg.Log.Info("event stream not asked for again on this session", "member", s.Member(), "why", a.Why, "err", err)
				return
			}
			cfg.Log.Debug("event stream ended; opening it again", "member", s.Member(), "why", a.Why, "err", err, "pause", a.Pause)
			if wait.Sleep(ctx, a.Pause, nil) != wait.Elapsed {
				return
			}
		}
	}()
}

// readEventStream opens s's GET event stream and hands what it carries to
// the client until it ends. It returns how it ended, for the policy, and
// the error it met, if any.
func (m *Messages) readEventStream(ctx context.Context, s Session) (policy.StreamEnd, error) {
	w := s.Streams().watch
	resp, err := m.sessionRequest(ctx, s, http.MethodGet, nil)
	if err != nil {
		return policy.StreamEnd{Failed: true, Verdict: w.verdict(policy.StreamAnswer{Err: err})}, err
	}
	defer resp.Body.Close()
	if !policy.StreamOpened(resp.StatusCode) {
		v := w.verdict(policy.StreamAnswer{
			Status:     resp.StatusCode,
			RetryAfter: wire.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		})
		return policy.StreamEnd{Failed: true, Verdict: v}, errEventStreamRefused(resp.StatusCode)
	}
	w.opened.Store(true)
	// Cut into events as mcp-go cuts its own streams (the guard, which
	// bounds the body already, reads them alike); one event up to the
	// same limit.
	events := wire.NewEventReader(resp.Body, m.host.Config().MaxResponseBytes)
	for {
		data, err := events.Next()
		if err == io.EOF {
			return policy.StreamEnd{}, nil
		}
		if err != nil {
			return policy.StreamEnd{}, err
		}
		m.streamMessage(ctx, s, data)
	}
}

// streamMessage handles one message of a stream the client reads itself.
// Notifications go to the handlers. A session opened without the stream
// declared nothing the server may ask of it (sampling, roots, elicitation
// would have opened the stream at once), so of the server's requests only
// ping is answered; the others are refused as mcp-go refuses a method it
// has no handler for. The message is decoded with encoding/json, not
// scanned (wire.Members): it is decoded whole for the handlers anyway,
// and encoding/json is how mcp-go reads what its own stream carries.
func (m *Messages) streamMessage(ctx context.Context, s Session, data []byte) {
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
			m.Handle(n)
		}
		return
	}
	reply := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{}}`
	if msg.Method != string(mcp.MethodPing) {
		reply = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32601,"message":"method not found"}}`
	}
	resp, err := m.sessionRequest(ctx, s, http.MethodPost, []byte(reply))
	if err == nil {
		resp.Body.Close()
	}
}

// sessionRequest sends a request on s as its mcp-go transport would: with
// its session id, protocol version and the caller's headers, through the
// client's HTTP client (its token, its guard).
func (m *Messages) sessionRequest(ctx context.Context, s Session, method string, body []byte) (*http.Response, error) {
	cfg := m.host.Config()
	var content io.Reader // none for a GET: net/http sends no body then
	if body != nil {
		content = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, cfg.Endpoint, content)
	if err != nil {
		return nil, err
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	req.Header.Set(transport.HeaderKeySessionID, s.MCP().GetSessionId())
	req.Header.Set(transport.HeaderKeyProtocolVersion, s.Version())
	for k, v := range cfg.Headers {
		req.Header.Set(k, v)
	}
	if cfg.HeaderFunc != nil {
		for k, v := range cfg.HeaderFunc(ctx) {
			req.Header.Set(k, v)
		}
	}
	return cfg.HTTPClient.Do(req)
}
