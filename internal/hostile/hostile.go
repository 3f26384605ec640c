// Package hostile is a small MCP server over Streamable HTTP whose answers to
// tools/call misbehave on purpose: another request's id, a body of hundreds
// of megabytes, an SSE stream of keepalive comments only, invalid or
// truncated JSON, an answer trickling in. Everything else (server/discover,
// initialize, ping, tools/list) it answers as a well-behaved server of the
// 2025-11-25 revision would, so that the client reaches the call under test.
//
// It speaks just enough MCP for that, on purpose not through mcp-go's
// server: a misbehaviour is a few lines of HTTP here, and the counters are
// exact. A Server is safe for concurrent use.
package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Answer writes the answer to one tools/call: id is the request's JSON-RPC
// id as it was sent, result the correct result (the tool has already run).
type Answer func(w http.ResponseWriter, r *http.Request, id json.RawMessage, result json.RawMessage)

// Server is the hostile MCP server, on 127.0.0.1.
type Server struct {
	URL string // the MCP endpoint

	srv      *httptest.Server
	mu       sync.Mutex
	answer   Answer
	runs     map[string]int64
	requests map[string]int64
	headers  []http.Header
	sessions atomic.Int64
}

// Tools the server offers: echo is read-only, so safe to replay; increment
// is neither read-only nor idempotent, and must never run twice.
const toolList = `{"tools":[` +
	`{"name":"echo","description":"Answers with its text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},` +
	`"annotations":{"readOnlyHint":true,"idempotentHint":true,"destructiveHint":false,"openWorldHint":false}},` +
	`{"name":"increment","description":"Counts its runs.","inputSchema":{"type":"object"},` +
	`"annotations":{"readOnlyHint":false,"idempotentHint":false,"destructiveHint":false,"openWorldHint":false}}]}`

// New starts a server whose tools/call answers are written by answer.
func New(answer Answer) *Server {
	s := &Server{answer: answer, runs: map[string]int64{}, requests: map[string]int64{}}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL + "/mcp"
	return s
}

// Close stops the server, cutting every connection still open.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetAnswer changes how tools/call is answered from now on.
func (s *Server) SetAnswer(a Answer) {
	s.mu.Lock()
	s.answer = a
	s.mu.Unlock()
}

// Runs is how many times tool ran.
func (s *Server) Runs(tool string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[tool]
}

// Requests is how many JSON-RPC requests of method the server received.
func (s *Server) Requests(method string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method]
}

// Sessions is how many sessions were initialized.
func (s *Server) Sessions() int64 { return s.sessions.Load() }

// Headers are the headers of every HTTP request received, in order.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// ServeHTTP answers one request the hostile way the Server was made with.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		return
	default:
		// No GET event stream.
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m message
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if m.Method == "" || len(m.ID) == 0 {
		// A notification, or an answer to a request of ours (we send none).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.mu.Lock()
	s.requests[m.Method]++
	answer := s.answer
	s.mu.Unlock()
	switch m.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "hostile-"+strconv.FormatInt(s.sessions.Add(1), 10))
		Right(false)(w, r, m.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`))
	case "ping":
		Right(false)(w, r, m.ID, json.RawMessage(`{}`))
	case "tools/list":
		Right(false)(w, r, m.ID, json.RawMessage(toolList))
	case "tools/call":
		s.mu.Lock()
		s.runs[m.Params.Name]++
		n := s.runs[m.Params.Name]
		s.mu.Unlock()
		text, _ := json.Marshal(fmt.Sprintf("%s ran %d times", m.Params.Name, n))
		answer(w, r, m.ID, json.RawMessage(`{"content":[{"type":"text","text":`+string(text)+`}]}`))
	default:
		// server/discover among them: this is a 2025-11-25 server.
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID))
	}
}

func response(id, result json.RawMessage) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(body))
}

func writeEvent(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
}

// Right answers correctly, as JSON or as one SSE event.
func Right(sse bool) Answer {
	return func(w http.ResponseWriter, _ *http.Request, id, result json.RawMessage) {
		if sse {
			writeEvent(w, response(id, result))
			return
		}
		writeJSON(w, string(response(id, result)))
	}
}

// OtherID is an id that is not id: what a server that mixes up its clients'
// answers would send.
func OtherID(id json.RawMessage) json.RawMessage {
	if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
		return json.RawMessage(strconv.FormatInt(n+1000, 10))
	}
	return json.RawMessage(`"someone else's"`)
}

// WrongID answers with a well-formed answer that carries another request's
// id, as JSON or as one SSE event (after a progress notification, which
// must pass).
func WrongID(sse bool) Answer {
	return func(w http.ResponseWriter, _ *http.Request, id, result json.RawMessage) {
		other := response(OtherID(id), json.RawMessage(`{"content":[{"type":"text","text":"an answer meant for another client"}]}`))
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
			writeEvent(w, other)
			return
		}
		writeJSON(w, string(other))
	}
}

// Huge answers with a result whose text is size bytes, streamed without a
// Content-Length (so only reading tells its size), as JSON or as one SSE
// event. It stops writing when the client goes.
func Huge(size int64, sse bool) Answer {
	return func(w http.ResponseWriter, r *http.Request, id, _ json.RawMessage) {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if _, err := w.Write([]byte(head)); err != nil {
			return
		}
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 'a'
		}
		for left := size; left > 0 && r.Context().Err() == nil; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(int64(len(chunk)), left)]); err != nil {
				return
			}
		}
		tail := `"}]}}`
		if sse {
			tail += "\n\n"
		}
		_, _ = w.Write([]byte(tail))
	}
}

// KeepaliveOnly answers with an SSE stream that sends a keepalive comment
// every interval and nothing else, until the client goes.
func KeepaliveOnly(every time.Duration) Answer {
	return func(w http.ResponseWriter, r *http.Request, _, _ json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if _, err := w.Write([]byte(": keepalive\n\n")); err != nil {
				return
			}
			f.Flush()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
	}
}

// Trickle answers correctly, one byte every interval: an answer still
// arriving when the call's deadline comes.
func Trickle(every time.Duration, sse bool) Answer {
	return func(w http.ResponseWriter, r *http.Request, id, result json.RawMessage) {
		body := response(id, result)
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			body = fmt.Appendf(nil, "event: message\ndata: %s\n\n", body)
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		f := w.(http.Flusher)
		for i := range body {
			if _, err := w.Write(body[i : i+1]); err != nil {
				return
			}
			f.Flush()
			select {
			case <-time.After(every):
			case <-r.Context().Done():
				return
			}
		}
	}
}

// Invalid answers with a body that is not JSON at all, under a JSON
// Content-Type.
func Invalid() Answer {
	return func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{,}]}}`, id))
	}
}

// Truncated answers with half of a correct answer, then drops the
// connection: the Content-Length promised the rest.
func Truncated() Answer {
	return func(w http.ResponseWriter, _ *http.Request, id, result json.RawMessage) {
		body := response(id, result)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// Then answers the first n calls with first, and every later one with
// after.
func Then(n int64, first, after Answer) Answer {
	var calls atomic.Int64
	return func(w http.ResponseWriter, r *http.Request, id, result json.RawMessage) {
		if calls.Add(1) <= n {
			first(w, r, id, result)
			return
		}
		after(w, r, id, result)
	}
}
