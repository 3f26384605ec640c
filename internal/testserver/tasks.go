package testserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// tasks is a task store that outlives restarts, as a server that keeps its
// tasks in a database does: mcp-go keeps them in the memory of one server
// generation, tied to the session that created them, so none would survive
// a restart there. The HTTP layer answers tasks/get, tasks/list,
// tasks/result and tasks/cancel from it, once mcp-go would have accepted
// the request's session.
type tasks struct {
	mu   sync.Mutex
	byID map[string]*taskEntry
}

type taskEntry struct {
	task   mcp.Task
	result string // the text of a completed task's result
}

// StartTask adds a working task that the server suggests polling every
// pollInterval. Tasks persist across restarts.
func (s *Server) StartTask(id string, pollInterval time.Duration) {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	if s.tasks.byID == nil {
		s.tasks.byID = map[string]*taskEntry{}
	}
	s.tasks.byID[id] = &taskEntry{task: mcp.NewTask(id, mcp.WithTaskPollInterval(pollInterval.Milliseconds()))}
}

// FinishTask completes a task with a text result, unless it ended
// already (cancelled).
func (s *Server) FinishTask(id, result string) {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	if e := s.tasks.byID[id]; e != nil && !e.task.Status.IsTerminal() {
		e.task.Status = mcp.TaskStatusCompleted
		e.task.LastUpdatedAt = time.Now().UTC().Format(time.RFC3339)
		e.result = result
	}
}

// TaskStatus is a task's status, "" if there is no such task.
func (s *Server) TaskStatus(id string) mcp.TaskStatus {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	if e := s.tasks.byID[id]; e != nil {
		return e.task.Status
	}
	return ""
}

// serveTask answers a tasks/* request from the store and reports whether it
// did. A request on a session this generation did not open is left to
// mcp-go, which answers it as a restarted server does (404); so is one
// about a task the store does not have (mcp-go's own tasks). In
// 2026-07-28 tasks/get answers as the tasks extension does (SEP-2663).
func (inst *instance) serveTask(w http.ResponseWriter, r *http.Request) bool {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		return false
	}
	switch mcp.MCPMethod(req.Method) {
	case mcp.MethodTasksGet, mcp.MethodTasksList, mcp.MethodTasksResult, mcp.MethodTasksCancel:
	default:
		return false
	}
	if id := r.Header.Get("Mcp-Session-Id"); (id != "" || inst.cfg.Era == SessionEra) && !inst.opened(id) {
		return false
	}
	store := &inst.srv.tasks
	store.mu.Lock()
	var result any
	var rpcErr string
	e := store.byID[req.Params.TaskID]
	if e == nil && (mcp.MCPMethod(req.Method) != mcp.MethodTasksList || len(store.byID) == 0) {
		// Not one of the store's: mcp-go's own, or nobody's.
		store.mu.Unlock()
		return false
	}
	switch mcp.MCPMethod(req.Method) {
	case mcp.MethodTasksList:
		list := mcp.ListTasksResult{Tasks: []mcp.Task{}}
		for _, e := range store.byID {
			list.Tasks = append(list.Tasks, e.task)
		}
		slices.SortFunc(list.Tasks, func(a, b mcp.Task) int { return cmpString(a.TaskId, b.TaskId) })
		result = list
	case mcp.MethodTasksGet:
		switch {
		case e == nil:
		case inst.cfg.Era == StatelessEra:
			result = sep2663Task(e.task, "complete", e.result)
		default:
			result = mcp.GetTaskResult{Task: e.task}
		}
	case mcp.MethodTasksCancel:
		if e != nil {
			if !e.task.Status.IsTerminal() {
				e.task.Status = mcp.TaskStatusCancelled
			}
			result = mcp.CancelTaskResult{Task: e.task}
		}
	case mcp.MethodTasksResult:
		switch {
		case e == nil:
		case e.task.Status != mcp.TaskStatusCompleted:
			rpcErr = "task not completed: " + string(e.task.Status)
		default:
			result = mcp.TaskResultResult{Content: []mcp.Content{mcp.NewTextContent(e.result)}}
		}
	}
	store.mu.Unlock()
	if result == nil && rpcErr == "" {
		rpcErr = "task not found"
	}
	out := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": req.ID}
	if rpcErr != "" {
		out["error"] = map[string]any{"code": mcp.INVALID_PARAMS, "message": rpcErr}
	} else {
		out["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
	return true
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// opened reports whether this generation opened the session id.
func (inst *instance) opened(id string) bool {
	inst.idsMu.Lock()
	defer inst.idsMu.Unlock()
	return id != "" && inst.ids[id]
}

// recordOpened notes a session id this generation handed out.
func (inst *instance) recordOpened(id string) {
	if id == "" {
		return
	}
	inst.idsMu.Lock()
	defer inst.idsMu.Unlock()
	if inst.ids == nil {
		inst.ids = map[string]bool{}
	}
	inst.ids[id] = true
}
