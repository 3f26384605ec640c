// Command tasks shows a long tool call that survives the agent's own
// restart: the tool runs as a task (MCP's tasks: the server answers at once
// with a task id, the client polls it), the client writes the task's id to
// a TaskStore in a directory before it asks about it, the agent process is
// killed with SIGKILL while the task runs, and the agent started again finds
// the task (PendingTasks) and collects its result (ResumeTask). The tool
// runs once.
//
//	go run ./examples/tasks
//
// It runs three processes: this one (the supervisor), which also serves
// the MCP server on 127.0.0.1, and the agent twice (this program with
// -agent). The server is the module's test server with ServerWideTasks:
// it keeps tasks beyond the session that created them, as a server that
// keeps its tasks in a database does. mcp-go's own task store (and
// server-everything's) binds a task to its session and keeps it in memory:
// an agent restarted there has a new session, and gets *client.TaskLostError
// for the old task instead of its result. Also on mcp-go's server: it runs a
// task under the context of the request that created it, which ends as soon
// as that request is answered, so a task handler that watched its context
// would be cancelled at once: the tool here does not rely on its context.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func main() {
	agent := flag.String("agent", "", "run as the agent, against this MCP endpoint")
	store := flag.String("store", "", "the agent's task store directory")
	flag.Parse()
	var err error
	if *agent != "" {
		err = runAgent(*agent, *store)
	} else {
		err = supervise()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tasks:", err)
		os.Exit(1)
	}
}

// supervise serves the MCP server, runs the agent, kills it mid-task, runs
// it again, and checks that the tool ran once and the task was collected.
func supervise() error {
	srv, err := testserver.Start(testserver.Config{TaskTools: true, ServerWideTasks: true})
	if err != nil {
		return err
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "resilientmcp-tasks-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := client.NewFileTaskStore(dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	first := exec.Command(self, "-agent", srv.URL(), "-store", dir)
	first.Stdout, first.Stderr = os.Stdout, os.Stderr
	if err := first.Start(); err != nil {
		return err
	}
	// The agent writes its task's id before it asks about the task: once
	// it is there, kill the agent while the task runs.
	var pending []client.PendingTask
	for deadline := time.Now().Add(30 * time.Second); len(pending) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			return errors.New("the agent wrote no task in 30 s")
		}
		if pending, err = store.List(context.Background()); err != nil {
			return err
		}
	}
	fmt.Printf("supervisor: the agent's task %s is in %s; killing the agent (SIGKILL) while the task runs\n", pending[0].ID, dir)
	if err := first.Process.Kill(); err != nil {
		return err
	}
	_ = first.Wait()

	second := exec.Command(self, "-agent", srv.URL(), "-store", dir)
	second.Stdout, second.Stderr = os.Stdout, os.Stderr
	if err := second.Run(); err != nil {
		return fmt.Errorf("the restarted agent: %w", err)
	}
	runs := srv.ToolRuns(testserver.TaskToolRequired)
	left, err := store.List(context.Background())
	if err != nil {
		return err
	}
	fmt.Printf("supervisor: the tool ran %d time(s); %d task(s) left in the store\n", runs, len(left))
	if runs != 1 || len(left) != 0 {
		return errors.New("want the tool run once and its result collected")
	}
	return nil
}

// runAgent is the agent: a client whose task ids live in dir. Started with
// tasks left by a previous process, it collects their results; else it
// calls the long tool (which requires a task: CallTool makes it one).
func runAgent(url, dir string) error {
	store, err := client.NewFileTaskStore(dir)
	if err != nil {
		return err
	}
	c, err := client.New(url, client.WithTaskStore(store))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pending, err := c.PendingTasks(ctx)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		fmt.Printf("agent %d: calling %s (3 s, as a task)\n", os.Getpid(), testserver.TaskToolRequired)
		req := mcp.CallToolRequest{}
		req.Params.Name = testserver.TaskToolRequired
		req.Params.Arguments = map[string]any{"text": "collected once"}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err
		}
		fmt.Printf("agent %d: %s\n", os.Getpid(), text(res))
		return nil
	}
	for _, t := range pending {
		fmt.Printf("agent %d: restarted; task %s (%s, created %s) was left pending; resuming it\n",
			os.Getpid(), t.ID, t.Tool, t.Created.Format(time.RFC3339))
		res, err := c.ResumeTask(ctx, t.ID)
		var lost *client.TaskLostError
		switch {
		case errors.As(err, &lost):
			// The server no longer knows it (restarted without keeping
			// tasks, its session expired, or the task expired): the outcome
			// is unknown; reconcile, do not call again blindly.
			return fmt.Errorf("task %s was lost: %w", lost.TaskID, err)
		case err != nil:
			return err
		}
		fmt.Printf("agent %d: %s\n", os.Getpid(), text(res))
	}
	return nil
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	t, _ := res.Content[0].(mcp.TextContent)
	return t.Text
}
