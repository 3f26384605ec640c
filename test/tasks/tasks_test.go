package tasks

import (
	"context"
	"errors"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// Tasks live on the server, apart from any session: reading, waiting for,
// listing and cancelling them carries on across restarts.
func TestTasksAcrossRestart(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			r := rig.New(t, testserver.Config{Era: era}, false)
			r.Srv.StartTask("build", 10*time.Millisecond)
			r.Srv.StartTask("deploy", 10*time.Millisecond)
			r.Start()
			ctx := r.Ctx()
			get := mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: "build"}}
			if res, err := r.C.GetTask(ctx, get); err != nil || res.Status != mcp.TaskStatusWorking {
				t.Fatalf("GetTask = %+v, %v", res, err)
			}
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			if res, err := r.C.GetTask(ctx, get); err != nil || res.Status != mcp.TaskStatusWorking {
				t.Fatalf("GetTask after a restart = %+v, %v", res, err)
			}

			// A wait that meets a restart goes on polling through it.
			type waited struct {
				res *mcp.GetTaskResult
				err error
			}
			done := make(chan waited, 1)
			go func() {
				res, err := r.C.WaitForTask(ctx, get, time.Second)
				done <- waited{res, err}
			}()
			rig.Eventually(t, "WaitForTask to poll", func() bool { return r.Srv.RPCs("tasks/get") >= 4 })
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			polls := r.Srv.RPCs("tasks/get")
			rig.Eventually(t, "WaitForTask to poll the restarted server", func() bool { return r.Srv.RPCs("tasks/get") > polls+2 })
			r.Srv.FinishTask("build", "built")
			w := <-done
			if w.err != nil || w.res.Status != mcp.TaskStatusCompleted {
				t.Fatalf("WaitForTask across a restart = %+v, %v", w.res, w.err)
			}
			res, err := r.C.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: "build"}})
			if err != nil || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "built" {
				t.Fatalf("TaskResult = %+v, %v", res, err)
			}

			cancelled, err := r.C.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: "deploy"}})
			if err != nil || cancelled.Status != mcp.TaskStatusCancelled {
				t.Fatalf("CancelTask = %+v, %v", cancelled, err)
			}
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			list, err := r.C.ListTasks(ctx, mcp.ListTasksRequest{})
			if err != nil || len(list.Tasks) != 2 || list.Tasks[0].TaskId != "build" || list.Tasks[1].Status != mcp.TaskStatusCancelled {
				t.Fatalf("ListTasks after a restart = %+v, %v", list, err)
			}
			if page, err := r.C.ListTasksByPage(ctx, mcp.ListTasksRequest{}); err != nil || len(page.Tasks) != 2 {
				t.Fatalf("ListTasksByPage = %+v, %v", page, err)
			}
			// The server's own answer comes back as is.
			_, err = r.C.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: "nope"}})
			if err == nil || errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrUnavailable) {
				t.Errorf("GetTask of an unknown task = %v, want the server's error", err)
			}
		})
	}
}

// WaitForTask keeps mcp-go's argument checks, and a deadline that passes
// between polls is ErrUnavailable: the next poll did not run.
func TestWaitForTaskErrors(t *testing.T) {
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
	r.Srv.StartTask("slow", time.Hour)
	r.Start()
	get := mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: "slow"}}
	if _, err := r.C.WaitForTask(r.Ctx(), get, 0); !errors.Is(err, mcpclient.ErrInvalidFallbackPollInterval) {
		t.Errorf("WaitForTask with no interval = %v", err)
	}
	// Polls a minute apart: the deadline passes between the first poll and
	// the second, never while a poll is out (with polls a millisecond
	// apart, a loaded machine had one out at the deadline about once in
	// four runs, and its outcome is rightly unknown).
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := r.C.WaitForTask(ctx, get, time.Minute)
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForTask past its deadline = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
}
