package tasks

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/resilientmcp/resilientmcp/auth/redisstore"
	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/redistest"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// A task agent is this test binary run again as a child process: a
// ResilientClient on a TaskStore (the environment says which) that calls
// the research tool as a task and waits for its result, until the test
// kills it with SIGKILL.
const (
	taskAgentEnv      = "RESILIENTMCP_TASK_AGENT" // set: this process is a task agent
	taskAgentURLEnv   = "RESILIENTMCP_TASK_AGENT_URL"
	taskAgentStoreEnv = "RESILIENTMCP_TASK_AGENT_STORE" // file:<dir> or redis:<addr>
)

// taskStoreFor opens the store an agent's environment names.
func taskStoreFor(t *testing.T, where string) client.TaskStore {
	t.Helper()
	switch kind, at, _ := strings.Cut(where, ":"); kind {
	case "file":
		s, err := client.NewFileTaskStore(at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: at, MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
		t.Cleanup(func() { rdb.Close() })
		return redisstore.NewTaskStore(rdb)
	}
	t.Fatalf("unknown task store %q", where)
	return nil
}

// TestHelperTaskAgent is not a test: it is a task agent when a test of
// this file runs the binary again with taskAgentEnv set.
func TestHelperTaskAgent(t *testing.T) {
	if os.Getenv(taskAgentEnv) == "" {
		t.Skip("a task agent process of the agent restart tests")
	}
	c, err := client.New(os.Getenv(taskAgentURLEnv), client.WithTaskStore(taskStoreFor(t, os.Getenv(taskAgentStoreEnv))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := rig.CallTool(ctx, c, testserver.TaskToolRequired, map[string]any{"text": "agent"})
	// Killed before it gets here.
	t.Logf("task agent: %q, %v", got, err)
}

// F38: the agent process killed with SIGKILL while its task runs, started
// again on the same TaskStore: PendingTasks lists the task, ResumeTask
// returns its result, and the tool ran once. On a directory (one machine)
// and on Redis (replicas).
func TestTaskAgentRestarted(t *testing.T) {
	t.Run("FileTaskStore", func(t *testing.T) {
		agentRestarted(t, "file:"+t.TempDir())
	})
	t.Run("Redis", func(t *testing.T) {
		agentRestarted(t, "redis:"+redistest.Start(t, false).Addr())
	})
}

func agentRestarted(t *testing.T, where string) {
	srv, err := testserver.Start(testserver.Config{TaskTools: true, ServerWideTasks: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	store := taskStoreFor(t, where)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTaskAgent$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), taskAgentEnv+"=1", taskAgentURLEnv+"="+srv.URL(), taskAgentStoreEnv+"="+where)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan string, 1)
	go func() {
		var b strings.Builder
		s := bufio.NewScanner(out)
		for s.Scan() {
			b.WriteString(s.Text() + "\n")
		}
		_ = cmd.Wait()
		exited <- b.String()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// The agent wrote its task to the store: kill it while the task runs.
	var pending []client.PendingTask
	rig.Eventually(t, "the agent's task in the store", func() bool {
		pending, err = store.List(context.Background())
		return err == nil && len(pending) == 1
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case output := <-exited:
		if strings.Contains(output, "task agent:") {
			t.Fatalf("the agent finished before it was killed: %s", output)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the killed agent did not exit")
	}
	if n := srv.ToolRuns(testserver.TaskToolRequired); n != 1 {
		t.Fatalf("the tool ran %d times before the restart, want 1", n)
	}
	calls := srv.RPCs("tools/call")

	// The agent started again.
	c, err := client.New(srv.URL(), client.WithTaskStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	left, err := c.PendingTasks(ctx)
	if err != nil || len(left) != 1 || left[0].ID != pending[0].ID || left[0].Tool != testserver.TaskToolRequired ||
		left[0].ArgsHash == "" || left[0].Created.IsZero() {
		t.Fatalf("PendingTasks after the restart = %+v, %v", left, err)
	}
	res, err := c.ResumeTask(ctx, left[0].ID)
	if err != nil || len(res.Content) != 1 || textOf(res) != "research done agent" {
		t.Fatalf("ResumeTask = %+v, %v", res, err)
	}
	if n := srv.ToolRuns(testserver.TaskToolRequired); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if n := srv.RPCs("tools/call"); n != calls {
		t.Errorf("the restarted agent sent %d tools/call: the call was sent again", n-calls)
	}
	if left, err := c.PendingTasks(ctx); err != nil || len(left) != 0 {
		t.Errorf("PendingTasks once the result was delivered = %+v, %v", left, err)
	}
}

// textOf is the text of a result's first content, "" if it has none.
func textOf(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	text, _ := res.Content[0].(mcp.TextContent)
	return text.Text
}
