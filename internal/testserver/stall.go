package testserver

import (
	"net/http"
	"slices"
	"sync"
)

// sessions remembers the session ids the server handed out and the ones a
// test has stalled.
type sessions struct {
	mu      sync.Mutex
	ids     []string
	stalled map[string]bool
}

func (ss *sessions) record(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if id != "" && !slices.Contains(ss.ids, id) {
		ss.ids = append(ss.ids, id)
	}
}

func (ss *sessions) isStalled(id string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return id != "" && ss.stalled[id]
}

// SessionIDs lists the Mcp-Session-Id values the server has handed out, in
// order, across restarts (session era only).
func (s *Server) SessionIDs() []string {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return slices.Clone(s.sessions.ids)
}

// StallSession makes every later request carrying Mcp-Session-Id id hang,
// unanswered, until the client gives up on it or the server stops: a stuck
// session, while the others are served normally.
func (s *Server) StallSession(id string) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	if s.sessions.stalled == nil {
		s.sessions.stalled = map[string]bool{}
	}
	s.sessions.stalled[id] = true
}

// stall holds a request of a stalled session until its context ends, and
// reports whether it did.
func (s *Server) stall(r *http.Request) bool {
	if !s.sessions.isStalled(r.Header.Get("Mcp-Session-Id")) {
		return false
	}
	<-r.Context().Done()
	return true
}
