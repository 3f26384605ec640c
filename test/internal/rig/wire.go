package rig

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// SentRequest is what a middleware in front of the server saw of a POSTed
// JSON-RPC message.
type SentRequest struct {
	Method                   string
	ID                       json.RawMessage // nil for a notification
	Params                   map[string]json.RawMessage
	HeaderMethod, HeaderName string // the Mcp-Method and Mcp-Name headers
	HasName                  bool
}

// routedName is the name SEP-2243 routes a request on: the tool of a
// tools/call, the prompt of a prompts/get, the URI of a resources/read; ""
// for other methods.
func (s SentRequest) RoutedName() string {
	var field string
	switch s.Method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	default:
		return ""
	}
	var name string
	_ = json.Unmarshal(s.Params[field], &name)
	return name
}

// WireRecorder is a testserver Guard that records every JSON-RPC message
// POSTed to the server, with the headers load balancers route on.
type WireRecorder struct {
	Mu   sync.Mutex
	Seen []SentRequest
}

func (w *WireRecorder) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     json.RawMessage            `json:"id"`
				Method string                     `json:"method"`
				Params map[string]json.RawMessage `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				s := SentRequest{Method: msg.Method, ID: msg.ID, Params: msg.Params,
					HeaderMethod: r.Header.Get(mcp.HeaderMethod), HeaderName: r.Header.Get(mcp.HeaderName)}
				_, s.HasName = r.Header[http.CanonicalHeaderKey(mcp.HeaderName)]
				w.Mu.Lock()
				w.Seen = append(w.Seen, s)
				w.Mu.Unlock()
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// records is what the recorder saw so far, in order.
func (w *WireRecorder) Records() []SentRequest {
	w.Mu.Lock()
	defer w.Mu.Unlock()
	return slices.Clone(w.Seen)
}
