// Package store holds what a client keeps across restarts of the agent,
// and the stores that keep it: the tasks its calls created
// (client.WithTaskStore) and the last good listings and reads
// (client.WithListingStore). An interface of each, and one in a directory;
// auth/redisstore has them in Redis. It is a package of its own so that a
// store imports these few types, not the whole client.
package store

import (
	"context"
	"time"
)

// PendingTask is a task a call of the client created and whose result has
// not been delivered yet, as a TaskStore keeps it. A plain value.
type PendingTask struct {
	ID   string `json:"id"`   // the server's task id
	Tool string `json:"tool"` // the tool called
	// ArgsHash is the hex SHA-256 of the call's arguments as JSON (keys
	// sorted), so that an agent can tell which of its calls a task was
	// without the store keeping the arguments themselves.
	ArgsHash string    `json:"argsHash,omitempty"`
	Created  time.Time `json:"created"` // when the server answered with the id
	// Endpoint is the MCP endpoint the task runs on: a store shared by
	// clients of several servers lists each one's own (client.PendingTasks).
	Endpoint string `json:"endpoint"`
}

// TaskStore keeps the ids of the tasks a client's calls created until
// their results are delivered, so that an agent restarted (a deploy, a
// crash) can collect them (client.PendingTasks, client.ResumeTask) instead of losing the
// work or doing it twice. The client writes a task before it asks the
// server about it for the first time, and deletes it once the caller has
// its result, once the server has answered a tasks/cancel, or once the
// server has said it no longer knows the task.
//
// Implementations must be safe for concurrent use; a store shared by
// several processes says so. The client calls them with the call's
// context, bounded; an error is logged and the call goes on (the task
// runs on the server whatever the store says; only its survival of a
// restart of this process is lost).
type TaskStore interface {
	// Put writes t under t.ID, replacing what was there.
	Put(ctx context.Context, t PendingTask) error
	// Delete removes the task id; deleting one that is not there is not
	// an error.
	Delete(ctx context.Context, id string) error
	// List returns every task stored, in no particular order.
	List(ctx context.Context) ([]PendingTask, error)
}

// fileTaskPrefix names the store's files: the directory may be shared with
// auth's FileStore, whose files are named by a hex key id.
const fileTaskPrefix = "task-"

// NewFileTaskStore returns a TaskStore in dir, created (0700) if need be:
// one machine, surviving restarts of the agent. Each task is a file
// task-<hex SHA-256 of its id>.json, 0600, written whole by an atomic
// rename (as auth's FileStore writes grants), so that a process killed
// mid-write leaves the old file or the new one, never half of it. No lock
// is needed: a task's file is written once, when its id is known, and
// removed once; two processes resuming the same task write the same
// record. It is safe for concurrent use by any number of goroutines and
// processes of the machine.
func NewFileTaskStore(dir string) (TaskStore, error) {
	return newFileStore(dir, fileTaskPrefix, "task store", func(t PendingTask) string { return t.ID })
}
