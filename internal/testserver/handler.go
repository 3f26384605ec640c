package testserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// maxBody bounds how much of a POST body is peeked; test requests are tiny.
const maxBody = 4 << 20

// ServeHTTP is the HTTP layer in front of mcp-go: it counts, then applies
// the configured endpoint personality and any injected fault.
func (inst *instance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !inst.inflight.enter() {
		// Only reachable for a request that raced with Stop.
		http.Error(w, "stopping", http.StatusServiceUnavailable)
		return
	}
	defer inst.inflight.leave()

	s := inst.srv
	s.counters.add(&s.counters.http, r.Method)
	var msg rpcInfo
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		msg = peekRPC(body, inst.cfg.RecordMeta)
		s.counters.record(msg)
		for i, m := range msg.methods {
			s.counters.add(&s.counters.rpc, m)
			if inst.cfg.RecordMeta {
				s.counters.addMeta(m, msg.metas[i])
			}
		}
		// mcp-go reads the body itself, so hand it back intact.
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}

	if s.stall(r) {
		return
	}
	cfg := inst.cfg
	switch {
	case cfg.NotMCP:
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>hello</html>")
		return
	case s.requiredToken(cfg) != "" && r.Header.Get("Authorization") != "Bearer "+s.requiredToken(cfg):
		if f := s.onRefused.Load(); f != nil {
			(*f)()
		}
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	case cfg.ExpiredSession400 && r.Header.Get("Mcp-Session-Id") != "" && !inst.opened(r.Header.Get("Mcp-Session-Id")):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
		return
	case r.Method == http.MethodGet && r.Header.Get("Mcp-Session-Id") != "" && !inst.opened(r.Header.Get("Mcp-Session-Id")):
		// mcp-go's stateful server answers a POST on a session it does not
		// know with 404, but opens a GET stream for it as if it were new,
		// so that a client holding only its event stream cannot tell a
		// restart from a quiet server. Answered as go-sdk answers it.
		http.Error(w, "session not found", http.StatusNotFound)
		return
	case cfg.DeclineGET && r.Method == http.MethodGet:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "GET declined", http.StatusMethodNotAllowed)
		return
	}

	if r.Method == http.MethodPost {
		if f, ok := s.faults.take(msg.methods); ok {
			if f.afterRun {
				// The backend really executes; only its answer is lost,
				// like a proxy failing after the upstream did the work.
				inst.backend(&discardWriter{header: http.Header{}}, r)
			}
			if f.status == 0 && f.rpcCode == 0 {
				dropConnection(w)
				return
			}
			if f.answer {
				writeAnswer(w, f, msg.id)
				return
			}
			if f.retryAfter != "" {
				w.Header().Set("Retry-After", f.retryAfter)
			}
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(f.status)
			_, _ = io.WriteString(w, "injected "+strconv.Itoa(f.status))
			return
		}
	}
	if cfg.SlowInitialize > 0 && slices.Contains(msg.methods, "initialize") {
		t := time.NewTimer(cfg.SlowInitialize)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if r.Method != http.MethodPost {
		inst.backend(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	inst.backend(sw, r)
	if sw.status == http.StatusOK {
		for _, m := range msg.methods {
			s.counters.add(&s.counters.answered, m)
		}
	}
	if slices.Contains(msg.methods, "initialize") {
		s.sessions.record(w.Header().Get("Mcp-Session-Id"))
		inst.recordOpened(w.Header().Get("Mcp-Session-Id"))
	}
}

// dropConnection closes the connection without an answer, so the client
// reads EOF, as when a proxy or the server dies mid-request.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // net/http closes the connection silently
	}
	_ = conn.Close()
}

// backend is the MCP server proper: mcp-go, optionally behind an older
// server's generic answer to server/discover.
func (inst *instance) backend(w http.ResponseWriter, r *http.Request) {
	if inst.cfg.MalformedDiscover && r.Method == http.MethodPost && inst.malformedDiscover(w, r) {
		return
	}
	if inst.cfg.NoHandshake && r.Method == http.MethodPost && inst.refuseInitialize(w, r) {
		return
	}
	if r.Method == http.MethodPost && inst.cfg.TaskTools && inst.cfg.ServerWideTasks && inst.serveTaskCall(w, r) {
		return
	}
	if r.Method == http.MethodPost && inst.serveTask(w, r) {
		return
	}
	inst.streamable.ServeHTTP(w, r)
}

func (inst *instance) refuseInitialize(w http.ResponseWriter, r *http.Request) bool {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	msg := peekRPC(body, false)
	if msg.batch || len(msg.methods) != 1 || msg.methods[0] != "initialize" || msg.id == nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.id)+`,"error":{"code":-32601,"message":"Method not found: initialize"}}`)
	return true
}

func (inst *instance) malformedDiscover(w http.ResponseWriter, r *http.Request) bool {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	msg := peekRPC(body, false)
	if msg.batch || len(msg.methods) != 1 || msg.methods[0] != "server/discover" || msg.id == nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.id)+`,"result":{}}`)
	return true
}

// rpcInfo is what the HTTP layer needs to know about a JSON-RPC body.
type rpcInfo struct {
	methods []string         // methods of the requests/notifications in it
	metas   []map[string]any // the params._meta of each, nil if none
	id      json.RawMessage  // id of a single message, if any
	batch   bool
	// cancelled is the requestId of a single notifications/cancelled.
	cancelled json.RawMessage
}

// peekRPC reads what body is; the _meta of each message too if withMeta.
func peekRPC(body []byte, withMeta bool) rpcInfo {
	type message struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	var info rpcInfo
	var msgs []message
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		info.batch = true
		_ = json.Unmarshal(trimmed, &msgs)
	} else {
		var m message
		if json.Unmarshal(trimmed, &m) == nil {
			msgs = []message{m}
			if len(m.ID) > 0 && string(m.ID) != "null" {
				info.id = m.ID
			}
			if m.Method == "notifications/cancelled" {
				var p struct {
					RequestID json.RawMessage `json:"requestId"`
				}
				if json.Unmarshal(m.Params, &p) == nil {
					info.cancelled = p.RequestID
				}
			}
		}
	}
	for _, m := range msgs {
		if m.Method != "" {
			info.methods = append(info.methods, m.Method)
			if !withMeta {
				continue
			}
			var params struct {
				Meta map[string]any `json:"_meta"`
			}
			_ = json.Unmarshal(m.Params, &params) // params that are not an object have no _meta
			info.metas = append(info.metas, params.Meta)
		}
	}
	return info
}

// discardWriter swallows a response. It implements http.Flusher so mcp-go
// treats it like a real streaming connection.
type discardWriter struct{ header http.Header }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// FailPOSTs makes the next n POST requests fail with status (n decrements;
// 0 turns injection off). With afterRun false the request never reaches
// mcp-go; with afterRun true mcp-go handles it (so a tool really runs), its
// response is discarded, and status is sent instead. Status 0 sends no
// answer at all: the connection is closed and the client reads EOF. retryAfter, if
// non-empty, is sent as Retry-After. If methods is non-empty only POSTs whose
// JSON-RPC method is one of them are affected (and counted against n).
func (s *Server) FailPOSTs(n int, status int, retryAfter string, afterRun bool, methods ...string) {
	s.faults.set(fault{
		remaining:  n,
		status:     status,
		retryAfter: retryAfter,
		afterRun:   afterRun,
		methods:    slices.Clone(methods),
	})
}

type fault struct {
	remaining  int
	status     int
	retryAfter string
	afterRun   bool
	methods    []string
	// answer: FailPOSTsAnswer's, with body, or the JSON-RPC error rpcCode.
	answer  bool
	body    string
	rpcCode int
	// supported: RefuseVersion's, the versions its -32022 lists.
	supported []string
}

// FailPOSTsAnswer is FailPOSTs with the answer given: status with body as
// it is ("" sends no body at all, as a gateway shutting down answers 499),
// or, if rpcCode is not 0, the JSON-RPC error rpcCode answering the
// request's id, under status (200 if 0), as a gateway answers when the
// server process behind it died under the request.
func (s *Server) FailPOSTsAnswer(n int, status int, body string, rpcCode int, afterRun bool, methods ...string) {
	s.faults.set(fault{
		remaining: n,
		status:    status,
		afterRun:  afterRun,
		methods:   slices.Clone(methods),
		answer:    true,
		body:      body,
		rpcCode:   rpcCode,
	})
}

// writeAnswer writes a FailPOSTsAnswer fault's answer to the request id.
func writeAnswer(w http.ResponseWriter, f fault, id json.RawMessage) {
	status := f.status
	if f.rpcCode == 0 {
		if f.body != "" {
			w.Header().Set("Content-Type", "text/plain")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, f.body)
		return
	}
	if status == 0 {
		status = http.StatusOK
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if f.supported != nil {
		data, _ := json.Marshal(map[string][]string{"supported": f.supported})
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":`+strconv.Itoa(f.rpcCode)+`,"message":"Unsupported protocol version","data":`+string(data)+`}}`)
		return
	}
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":`+strconv.Itoa(f.rpcCode)+`,"message":"injected: the server process exited"}}`)
}

// RefuseVersion makes the next n POSTs be refused as a server of the
// 2026-07-28 revision refuses a protocol version it does not take
// (SEP-2575): HTTP 400 with the JSON-RPC error -32022 and data.supported
// listing supported. The request does not reach mcp-go. If methods is
// non-empty only POSTs whose JSON-RPC method is one of them are refused
// (and counted against n).
func (s *Server) RefuseVersion(n int, supported []string, methods ...string) {
	s.faults.set(fault{
		remaining: n,
		status:    http.StatusBadRequest,
		methods:   slices.Clone(methods),
		answer:    true,
		rpcCode:   -32022,
		supported: slices.Clone(supported),
	})
}

type faults struct {
	mu  sync.Mutex
	cur fault
}

func (f *faults) set(next fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur = next
}

// take consumes one injection if one applies to a POST carrying methods.
func (f *faults) take(methods []string) (fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur.remaining <= 0 {
		return fault{}, false
	}
	if len(f.cur.methods) > 0 && !slices.ContainsFunc(methods, func(m string) bool {
		return slices.Contains(f.cur.methods, m)
	}) {
		return fault{}, false
	}
	f.cur.remaining--
	return f.cur, true
}

// counters persist across restarts; they belong to the Server, not to a
// generation.
type counters struct {
	mu    sync.Mutex
	tools map[string]int64
	http  map[string]int64
	rpc   map[string]int64
	// answered: the POSTed messages the server answered with 200, by
	// method (not those refused with a 404 for an expired session).
	answered map[string]int64
	metas    map[string][]map[string]any // by method, in the order received
	// callIDs are the ids of the tools/call requests received, and
	// cancelled the requestIds of the notifications/cancelled, in order
	// (the first maxMetas of each).
	callIDs, cancelled []string
}

// record keeps what tests ask of single messages: a tools/call's id, a
// notifications/cancelled's requestId.
func (c *counters) record(msg rpcInfo) {
	if msg.batch || len(msg.methods) != 1 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case msg.methods[0] == "tools/call" && msg.id != nil && len(c.callIDs) < maxMetas:
		c.callIDs = append(c.callIDs, string(msg.id))
	case msg.cancelled != nil && len(c.cancelled) < maxMetas:
		c.cancelled = append(c.cancelled, string(msg.cancelled))
	}
}

// ToolCallIDs are the JSON-RPC ids of the tools/call requests received
// since the last reset, as written on the wire, in order.
func (s *Server) ToolCallIDs() []string {
	s.counters.mu.Lock()
	defer s.counters.mu.Unlock()
	return slices.Clone(s.counters.callIDs)
}

// CancelledIDs are the requestIds of the notifications/cancelled received
// since the last reset, as written on the wire, in order.
func (s *Server) CancelledIDs() []string {
	s.counters.mu.Lock()
	defer s.counters.mu.Unlock()
	return slices.Clone(s.counters.cancelled)
}

func (c *counters) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools = map[string]int64{}
	c.http = map[string]int64{}
	c.rpc = map[string]int64{}
	c.answered = map[string]int64{}
	c.metas = map[string][]map[string]any{}
	c.callIDs, c.cancelled = nil, nil
}

// maxMetas bounds the _meta kept per method: tests look at a few calls,
// benchmarks make millions.
const maxMetas = 1024

func (c *counters) addMeta(method string, meta map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.metas[method]) < maxMetas {
		c.metas[method] = append(c.metas[method], meta)
	}
}

// add increments (*m)[key] and returns the new value. m points at one of
// the maps so that reset can replace them under the same lock.
func (c *counters) add(m *map[string]int64, key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	(*m)[key]++
	return (*m)[key]
}

func (c *counters) get(m *map[string]int64, key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (*m)[key]
}

// ToolRuns reports how many times the named tool's handler executed.
func (s *Server) ToolRuns(tool string) int64 { return s.counters.get(&s.counters.tools, tool) }

// HTTPRequests reports how many HTTP requests arrived with the given method
// ("GET", "POST", "DELETE", ...), including ones failed by injection.
func (s *Server) HTTPRequests(method string) int64 { return s.counters.get(&s.counters.http, method) }

// RPCs reports how many POSTed JSON-RPC messages had the given method
// ("initialize", "server/discover", "tools/call", ...), including ones
// failed by injection.
func (s *Server) RPCs(method string) int64 { return s.counters.get(&s.counters.rpc, method) }

// Answered reports how many POSTed JSON-RPC messages of the given method
// the server answered with 200: unlike RPCs, not those it refused (a 404
// for a session it does not know, an injected failure). A JSON-RPC error
// in a 200 counts.
func (s *Server) Answered(method string) int64 {
	return s.counters.get(&s.counters.answered, method)
}

// ReceivedMeta reports the params._meta of every JSON-RPC message of the
// given method the server received (nil for one without), in order, up to
// the first 1024; including ones failed by injection. Only a server whose
// Config has RecordMeta keeps them. The maps are the
// server's copies: the caller may keep them, and must not change them.
func (s *Server) ReceivedMeta(method string) []map[string]any {
	s.counters.mu.Lock()
	defer s.counters.mu.Unlock()
	return slices.Clone(s.counters.metas[method])
}

// ResetCounters zeroes every counter, including the value increment returns.
func (s *Server) ResetCounters() { s.counters.reset() }

// statusWriter remembers the status written through it, for Answered. It
// passes Flush on, for the streams mcp-go flushes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
