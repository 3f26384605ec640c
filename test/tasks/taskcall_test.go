package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// F37: a tool whose taskSupport is required, called with a plain
// CallTool, returns its final result, as a user who never heard of tasks
// expects; one whose taskSupport is optional does too with AsTask (or
// WithTaskCalls). Each ran once.
func TestTaskToolPlainCallTool(t *testing.T) {
	rig.BothWays(t, func(t *testing.T, listFirst bool) {
		r := rig.New(t, testserver.Config{TaskTools: true}, false)
		r.Start()
		if listFirst {
			r.ListTools()
		}
		args := map[string]any{"ms": 300, "text": "a"}
		got, err := rig.CallTool(r.Ctx(), r.C, testserver.TaskToolRequired, args)
		if err != nil || got != "research done a" {
			t.Fatalf("CallTool(research) = %q, %v", got, err)
		}
		ctx := client.WithCallOptions(r.Ctx(), client.AsTask())
		got, err = rig.CallTool(ctx, r.C, testserver.TaskToolOptional, args)
		if err != nil || got != "crunch done a" {
			t.Fatalf("CallTool(crunch, AsTask) = %q, %v", got, err)
		}
		if n := r.Srv.RPCs("tasks/get"); n == 0 {
			t.Errorf("no tasks/get: the calls were not made as tasks")
		}
		for _, tool := range []string{testserver.TaskToolRequired, testserver.TaskToolOptional} {
			if n := r.Srv.ToolRuns(tool); n != 1 {
				t.Errorf("%s ran %d times, want 1", tool, n)
			}
		}
		// Without a listing the required tool met one plain attempt,
		// refused; with one it was called as a task at once.
		want := int64(2)
		if listFirst {
			want = 1
		}
		if n := r.Srv.RPCs("tools/call"); n != want+1 {
			t.Errorf("%d tools/call, want %d", n, want+1)
		}
		pending, err := r.C.PendingTasks(r.Ctx())
		if err != nil || len(pending) != 0 {
			t.Errorf("PendingTasks after the results were delivered = %v, %v", pending, err)
		}
	})
}

// WithTaskCalls makes every call of a tool that offers a task one; without
// it (and without AsTask) such a tool is called plainly.
func TestWithTaskCalls(t *testing.T) {
	r := rig.New(t, testserver.Config{TaskTools: true}, false, client.WithTaskCalls())
	r.Start()
	if got, err := rig.CallTool(r.Ctx(), r.C, testserver.TaskToolOptional, map[string]any{"ms": 10, "text": "b"}); err != nil || got != "crunch done b" {
		t.Fatalf("CallTool(crunch) = %q, %v", got, err)
	}
	if n := r.Srv.RPCs("tasks/get") + r.Srv.RPCs("tasks/result"); n == 0 {
		t.Errorf("WithTaskCalls: crunch was not called as a task")
	}

	plain := rig.New(t, testserver.Config{TaskTools: true}, false)
	plain.Start()
	if got, err := rig.CallTool(plain.Ctx(), plain.C, testserver.TaskToolOptional, map[string]any{"ms": 10, "text": "c"}); err != nil || got != "crunch done c" {
		t.Fatalf("CallTool(crunch) = %q, %v", got, err)
	}
	if n := plain.Srv.RPCs("tasks/get") + plain.Srv.RPCs("tasks/result"); n != 0 {
		t.Errorf("without options crunch was called as a task (%d task requests)", n)
	}
}

// asyncCall is a CallTool under way on its own goroutine.
type asyncCall struct {
	done chan struct{}
	res  string
	err  error
}

func callAsync(ctx context.Context, c *client.ResilientClient, tool string, args map[string]any) *asyncCall {
	a := &asyncCall{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.res, a.err = rig.CallTool(ctx, c, tool, args)
	}()
	return a
}

// wait waits (at most 30 s) for the call to return.
func (a *asyncCall) wait(t *testing.T) {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return")
	}
}

// pendingTask waits for the client to have written the task of a call
// under way to its store, and returns it.
func pendingTask(t *testing.T, c *client.ResilientClient) client.PendingTask {
	t.Helper()
	var p []client.PendingTask
	rig.Eventually(t, "the task to be in the store", func() bool {
		var err error
		p, err = c.PendingTasks(context.Background())
		return err == nil && len(p) == 1
	})
	return p[0]
}

// F37: the connection cut three times while a 3 s task runs, on a tool
// that is not safe to repeat, on a server that binds tasks to their
// session: each cut loses an answer about the task, which is asked again
// on the same session; the call returns the result, and the tool ran once
// (the call was never sent again).
func TestTaskCallSurvivesConnectionCuts(t *testing.T) {
	r := rig.New(t, testserver.Config{TaskTools: true}, true)
	r.Start()
	r.ListTools()
	a := callAsync(r.Ctx(), r.C, testserver.TaskToolRequired, map[string]any{"text": "cut"})
	pendingTask(t, r.C)
	for i := range 3 {
		n := r.Srv.RPCs("tasks/get") + r.Srv.RPCs("tasks/result")
		r.Proxy.ResetAll()           // the idle connections
		r.Proxy.ResetAfterRequest(1) // and the next answer
		rig.Eventually(t, "the lost answer to be asked for again", func() bool {
			select {
			case <-a.done:
				return true
			default:
			}
			return r.Srv.RPCs("tasks/get")+r.Srv.RPCs("tasks/result") >= n+2
		})
		t.Logf("cut %d", i+1)
	}
	a.wait(t)
	if a.err != nil || a.res != "research done cut" {
		t.Fatalf("CallTool through three cuts = %q, %v", a.res, a.err)
	}
	if n := r.Srv.ToolRuns(testserver.TaskToolRequired); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if n := r.Srv.RPCs("tools/call"); n != 1 {
		t.Errorf("%d tools/call, want 1: the call was sent again", n)
	}
	if st := r.C.Stats(); st.Retries < 3 || st.Reinitializations != 0 {
		t.Errorf("Stats = %+v, want 3 retries or more (the lost answers) and the session kept", st)
	}
}

// F37's one window: the answer to the creating tools/call itself lost
// (the connection reset once the server answered). No task id came back,
// so the rules for unsafe calls apply, as for any call: ErrOutcomeUnknown,
// and the call is not sent again.
func TestTaskCreationAnswerLost(t *testing.T) {
	r := rig.New(t, testserver.Config{TaskTools: true}, true)
	r.Start()
	r.ListTools()
	r.Proxy.ResetAfterRequest(1)
	_, err := rig.CallTool(r.Ctx(), r.C, testserver.TaskToolRequired, map[string]any{"ms": 100})
	if !errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("CallTool whose creating answer was lost = %v, want ErrOutcomeUnknown", err)
	}
	if n := r.Srv.RPCs("tools/call"); n != 1 {
		t.Errorf("%d tools/call, want 1: the call was sent again", n)
	}
	rig.Eventually(t, "the task to run", func() bool { return r.Srv.ToolRuns(testserver.TaskToolRequired) == 1 })
	if p, err := r.C.PendingTasks(context.Background()); err != nil || len(p) != 0 {
		t.Errorf("PendingTasks = %v, %v: no id came back to keep", p, err)
	}
}

// F37: an outage longer than a request's timeout, then the session
// re-initialized (the server came back without its sessions), while the
// task runs, on a server that keeps tasks beyond the session: the requests
// about the task that gave up during the outage are followed by asking
// again, the client polls the same id on the new session, and the call
// returns the result; the tool ran once.
func TestTaskCallSurvivesOutageAndReinitialization(t *testing.T) {
	logs := &rig.LogRecorder{}
	r := rig.New(t, testserver.Config{TaskTools: true, ServerWideTasks: true}, false,
		client.WithCallTimeout(300*time.Millisecond), client.WithLogger(logs.Logger()))
	r.Start()
	r.ListTools()
	a := callAsync(r.Ctx(), r.C, testserver.TaskToolRequired, map[string]any{"text": "reinit"})
	task := pendingTask(t, r.C)
	r.Srv.Stop()
	rig.Eventually(t, "a request about the task to give up during the outage", func() bool {
		return logs.Has(slog.LevelInfo, "asking about the task failed; asking again", "task", task.ID)
	})
	polls := r.Srv.RPCs("tasks/get")
	if err := r.Srv.Start(); err != nil {
		t.Fatal(err)
	}
	a.wait(t)
	if a.err != nil || a.res != "research done reinit" {
		t.Fatalf("CallTool across an outage and a re-initialization = %q, %v", a.res, a.err)
	}
	if n := r.Srv.ToolRuns(testserver.TaskToolRequired); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if n := r.Srv.RPCs("tools/call"); n != 1 {
		t.Errorf("%d tools/call, want 1", n)
	}
	if st := r.C.Stats(); st.Reinitializations == 0 {
		t.Errorf("Stats = %+v: the session was not re-initialized", st)
	}
	if r.Srv.RPCs("tasks/get") <= polls {
		t.Errorf("no tasks/get after the outage")
	}
}

// F37: cancelling the caller's context cancels the task: the server gets
// tasks/cancel, the task ends cancelled, and its id leaves the store once
// the cancel is answered. The caller's error says the tool may have run.
func TestTaskCallCancelled(t *testing.T) {
	r := rig.New(t, testserver.Config{TaskTools: true}, false)
	r.Start()
	r.ListTools()
	ctx, cancel := context.WithCancel(r.Ctx())
	a := callAsync(ctx, r.C, testserver.TaskToolRequired, map[string]any{"text": "x"})
	task := pendingTask(t, r.C)
	cancel()
	a.wait(t)
	if !errors.Is(a.err, client.ErrOutcomeUnknown) || !errors.Is(a.err, context.Canceled) || errors.Is(a.err, client.ErrUnavailable) {
		t.Errorf("cancelled task call = %v, want ErrOutcomeUnknown and context.Canceled", a.err)
	}
	rig.Eventually(t, "tasks/cancel", func() bool { return r.Srv.RPCs("tasks/cancel") == 1 })
	rig.Eventually(t, "the task to leave the store", func() bool {
		p, err := r.C.PendingTasks(context.Background())
		return err == nil && len(p) == 0
	})
	got, err := r.C.GetTask(r.Ctx(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.ID}})
	if err != nil || got.Status != mcp.TaskStatusCancelled {
		t.Errorf("the task after the cancel = %+v, %v; want cancelled", got, err)
	}
}

// F37: the server restarted without keeping its tasks: the task call ends
// with *TaskLostError naming the task (outcome unknown, not unavailable),
// well within its deadline, and the call is not sent again.
func TestTaskLostAfterServerRestart(t *testing.T) {
	r := rig.New(t, testserver.Config{TaskTools: true}, false)
	r.Start()
	r.ListTools()
	const deadline = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	a := callAsync(ctx, r.C, testserver.TaskToolRequired, map[string]any{"text": "lost"})
	task := pendingTask(t, r.C)
	if err := r.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	a.wait(t)
	var lost *client.TaskLostError
	if !errors.As(a.err, &lost) || lost.TaskID != task.ID || !strings.Contains(a.err.Error(), task.ID) {
		t.Fatalf("CallTool after the server forgot its task = %v, want *TaskLostError naming %s", a.err, task.ID)
	}
	if !errors.Is(a.err, client.ErrOutcomeUnknown) || errors.Is(a.err, client.ErrUnavailable) {
		t.Errorf("%v: want ErrOutcomeUnknown, not ErrUnavailable", a.err)
	}
	// The acceptance's bound: "well within the call's deadline". The
	// restart and one re-initialization take milliseconds; half the
	// deadline is generous.
	if took := time.Since(start); took > deadline/2 {
		t.Errorf("TaskLostError after %v, not well within the %v deadline", took, deadline)
	}
	if n := r.Srv.RPCs("tools/call"); n != 1 {
		t.Errorf("%d tools/call, want 1: the call was sent again", n)
	}
	if n := r.Srv.ToolRuns(testserver.TaskToolRequired); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if p, err := r.C.PendingTasks(context.Background()); err != nil || len(p) != 0 {
		t.Errorf("PendingTasks after the task was lost = %v, %v", p, err)
	}
}

// F37 in 2026-07-28 (the test server stateless, keeping its tasks as the
// tasks extension says): the creating tools/call carries params.task, the
// extension in its client capabilities and Mcp-Name = the tool; every
// tasks/* request carries Mcp-Name = the task id; the result comes inline
// in tasks/get.
func TestTaskCall20260728Wire(t *testing.T) {
	rw := &rig.WireRecorder{}
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra, TaskTools: true, ServerWideTasks: true, Guard: rw.Guard}, false)
	r.Start()
	r.ListTools()
	got, err := rig.CallTool(r.Ctx(), r.C, testserver.TaskToolRequired, map[string]any{"ms": 1500, "text": "wire"})
	if err != nil || got != "research done wire" {
		t.Fatalf("CallTool = %q, %v", got, err)
	}
	var id string
	var tasksRequests int
	for _, rec := range rw.Records() {
		switch {
		case rec.Method == "tools/call":
			if _, ok := rec.Params["task"]; !ok {
				t.Errorf("tools/call without params.task: %s", rec.Params)
			}
			if rec.HeaderName != testserver.TaskToolRequired || rec.HeaderMethod != "tools/call" {
				t.Errorf("tools/call with Mcp-Name %q, Mcp-Method %q", rec.HeaderName, rec.HeaderMethod)
			}
			if !bytes.Contains(rec.Params["_meta"], []byte(`"io.modelcontextprotocol/tasks"`)) {
				t.Errorf("tools/call does not declare the tasks extension: _meta %s", rec.Params["_meta"])
			}
		case strings.HasPrefix(rec.Method, "tasks/"):
			tasksRequests++
			var p struct {
				TaskID string `json:"taskId"`
			}
			_ = json.Unmarshal(mustJSON(t, rec.Params), &p)
			if id == "" {
				id = p.TaskID
			}
			if p.TaskID != id || rec.HeaderName != id || rec.HeaderMethod != rec.Method {
				t.Errorf("%s for task %q with Mcp-Name %q, Mcp-Method %q; want the task id %q", rec.Method, p.TaskID, rec.HeaderName, rec.HeaderMethod, id)
			}
		}
	}
	if tasksRequests == 0 || id == "" {
		t.Fatalf("no tasks/* request on the wire")
	}
	if n := r.Srv.ToolRuns(testserver.TaskToolRequired); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// F37 against a server nobody here wrote: server-everything's
// simulate-research-query has taskSupport required; a plain CallTool
// returns its report.
func TestTaskToolServerEverything(t *testing.T) {
	e := rig.StartEverything(t)
	c, err := client.New(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := rig.ToolRequest("simulate-research-query", map[string]any{"topic": "tasks"})
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("CallTool(simulate-research-query) = %v", err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("CallTool(simulate-research-query) = %+v", res)
	}
	text, _ := res.Content[0].(mcp.TextContent)
	if !strings.Contains(text.Text, "Research Report: tasks") {
		t.Errorf("the report = %.200q", text.Text)
	}
	if p, err := c.PendingTasks(ctx); err != nil || len(p) != 0 {
		t.Errorf("PendingTasks = %v, %v", p, err)
	}
}

// A plain tools/call the server refuses for want of a task, followed by
// the task, is one call as Stats and the observers see it: one start, one
// end (no error: the task's result is the call's), Calls 1.
func TestTaskFallbackIsOneCall(t *testing.T) {
	rec := &rig.Recorder{T: t, Name: "rec"}
	r := rig.New(t, testserver.Config{TaskTools: true}, false, client.WithObserver(rec))
	got, err := rig.CallTool(r.Ctx(), r.C, testserver.TaskToolRequired, map[string]any{"ms": 50, "text": "a"})
	if err != nil || got != "research done a" {
		t.Fatalf("CallTool(research) = %q, %v", got, err)
	}
	if n := r.Srv.RPCs("tools/call"); n != 2 {
		t.Fatalf("%d tools/call; want 2 (the plain one refused, then the task): the fallback was not provoked", n)
	}
	if st := r.C.Stats(); st.Calls != 1 || st.InFlight != 0 {
		t.Errorf("Stats: %d calls, %d in flight after one CallTool; want 1 and 0", st.Calls, st.InFlight)
	}
	lines, _ := rec.Told()
	var starts, ends []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "call ended"):
			ends = append(ends, l)
		case strings.HasPrefix(l, "call "):
			starts = append(starts, l)
		}
	}
	if len(starts) != 1 || len(ends) != 1 || !strings.HasPrefix(ends[0], `call ended ""`) {
		t.Errorf("the observer was told of %d starts %q and %d ends %q; want one of each, the end without an error", len(starts), starts, len(ends), ends)
	}
}
