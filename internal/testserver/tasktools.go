package testserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Task tools (Config.TaskTools). research has execution.taskSupport "required" (registered
// with mcp-go's AddTaskTool: a plain call of it is refused with -32601),
// crunch "optional" (an ordinary tool that may be called as a task). Both
// run for "ms" milliseconds (default TaskToolDuration), count their runs
// (ToolRuns) when they start, and answer "<tool> done <text>". Neither is
// read-only or idempotent.
//
// mcp-go runs a task under the context of the request that created it,
// which ends as soon as that request is answered: a handler that watched
// its context would be cancelled at once. These handlers watch the
// server's Close instead, so that Close does not wait for them.
//
// Where a task lives: by default in mcp-go, in the memory of one server
// generation, bound to the session that created it (another session, or
// the same client after a restart, gets -32602 "task not found"); and in
// 2026-07-28 mcp-go answers tasks/get without the result and refuses
// tasks/result. With Config.ServerWideTasks the HTTP layer makes the tasks
// of these tools itself, in a store of the Server that outlives sessions
// and restarts (as a server that keeps its tasks in a database does), runs
// the tool on a goroutine of the Server, and answers tasks/get in
// 2026-07-28 as the tasks extension (SEP-2663) says: with the result of a
// completed task inline.
const (
	TaskToolRequired = "research"
	TaskToolOptional = "crunch"
	TaskToolDuration = 3 * time.Second
)

// taskWork is what the Server runs for task tools, apart from any
// generation.
type taskWork struct {
	once sync.Once
	quit chan struct{} // closed by Close
	wg   sync.WaitGroup
}

func (w *taskWork) stop() <-chan struct{} {
	w.once.Do(func() { w.quit = make(chan struct{}) })
	return w.quit
}

func (w *taskWork) close() {
	w.stop()
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	w.wg.Wait()
}

// runTaskTool runs a task tool's work: it counts the run, waits ms (or
// until Close) and returns the text of its result.
func (s *Server) runTaskTool(name string, args map[string]any) (string, bool) {
	s.taskWork.wg.Add(1)
	defer s.taskWork.wg.Done()
	s.counters.add(&s.counters.tools, name)
	d := TaskToolDuration
	if ms, ok := args["ms"].(float64); ok {
		d = time.Duration(ms * float64(time.Millisecond))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.taskWork.stop():
		return "", false
	}
	text, _ := args["text"].(string)
	return name + " done " + text, true
}

func taskToolOptions(desc string) []mcp.ToolOption {
	return append(hints(false, false),
		mcp.WithDescription(desc),
		mcp.WithString("text"),
		mcp.WithNumber("ms"))
}

// addTaskTools registers research and crunch on m.
func addTaskTools(s *Server, m *server.MCPServer) {
	m.AddTaskTool(mcp.NewTool(TaskToolRequired, append(taskToolOptions(
		"Runs ms milliseconds (default 3 s) as a task only, then answers."),
		mcp.WithTaskSupport(mcp.TaskSupportRequired))...),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
			text, ok := s.runTaskTool(TaskToolRequired, req.GetArguments())
			if !ok {
				return nil, context.Canceled
			}
			return &mcp.CreateTaskResult{Content: []mcp.Content{mcp.NewTextContent(text)}}, nil
		})
	m.AddTool(mcp.NewTool(TaskToolOptional, append(taskToolOptions(
		"Runs ms milliseconds (default 3 s), as a task or not, then answers."),
		mcp.WithTaskSupport(mcp.TaskSupportOptional))...),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, ok := s.runTaskTool(TaskToolOptional, req.GetArguments())
			if !ok {
				return nil, context.Canceled
			}
			return mcp.NewToolResultText(text), nil
		})
}

// serveTaskCall makes the task of a task-augmented tools/call of a task
// tool in the Server's store (Config.ServerWideTasks), and reports whether
// it answered.
func (inst *instance) serveTaskCall(w http.ResponseWriter, r *http.Request) bool {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments map[string]any  `json:"arguments"`
			Task      json.RawMessage `json:"task"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.Method != string(mcp.MethodToolsCall) || len(req.ID) == 0 ||
		len(req.Params.Task) == 0 || string(req.Params.Task) == "null" ||
		(req.Params.Name != TaskToolRequired && req.Params.Name != TaskToolOptional) {
		return false
	}
	if id := r.Header.Get("Mcp-Session-Id"); (id != "" || inst.cfg.Era == SessionEra) && !inst.opened(id) {
		return false // mcp-go answers for a session it does not know
	}
	s := inst.srv
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.tasks.mu.Lock()
	if s.tasks.byID == nil {
		s.tasks.byID = map[string]*taskEntry{}
	}
	e := &taskEntry{task: mcp.NewTask(id)}
	s.tasks.byID[id] = e
	created := e.task
	s.tasks.mu.Unlock()
	s.taskWork.wg.Add(1)
	go func() {
		defer s.taskWork.wg.Done()
		text, ok := s.runTaskTool(req.Params.Name, req.Params.Arguments)
		if ok {
			s.FinishTask(id, text)
		}
	}()
	var result any = mcp.CreateTaskResult{Task: created}
	if inst.cfg.Era == StatelessEra {
		result = sep2663Task(created, "task", "")
	}
	writeResult(w, req.ID, result)
	return true
}

// sep2663Task is a task as the tasks extension writes it: inline, with
// resultType, pollIntervalMs, and a completed task's result.
func sep2663Task(t mcp.Task, resultType, result string) map[string]any {
	out := map[string]any{
		"resultType":    resultType,
		"taskId":        t.TaskId,
		"status":        t.Status,
		"createdAt":     t.CreatedAt,
		"lastUpdatedAt": t.LastUpdatedAt,
		"ttlMs":         nil,
	}
	if t.StatusMessage != "" {
		out["statusMessage"] = t.StatusMessage
	}
	if t.PollInterval != nil {
		out["pollIntervalMs"] = *t.PollInterval
	}
	if t.Status == mcp.TaskStatusCompleted {
		out["result"] = mcp.NewToolResultText(result)
	}
	return out
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "result": result})
}

// ForgetTasks empties the Server's own task store, as a restart of a
// server that keeps its tasks in memory would.
func (s *Server) ForgetTasks() {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	s.tasks.byID = nil
}

// TaskIDs lists the ids in the Server's own task store
// (Config.ServerWideTasks, StartTask).
func (s *Server) TaskIDs() []string {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	out := make([]string, 0, len(s.tasks.byID))
	for id := range s.tasks.byID {
		out = append(out, id)
	}
	return out
}
