package client

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/atomicfile"
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
	// clients of several servers lists each one's own (PendingTasks).
	Endpoint string `json:"endpoint"`
}

// TaskStore keeps the ids of the tasks a client's calls created until
// their results are delivered, so that an agent restarted (a deploy, a
// crash) can collect them (PendingTasks, ResumeTask) instead of losing the
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

// memoryTaskStore is the default TaskStore: this process only.
type memoryTaskStore struct {
	mu    sync.Mutex             // a leaf
	tasks map[string]PendingTask // made by the first Put: every client has a store, few call tasks
}

func newMemoryTaskStore() *memoryTaskStore { return &memoryTaskStore{} }

func (s *memoryTaskStore) Put(_ context.Context, t PendingTask) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks == nil {
		s.tasks = map[string]PendingTask{}
	}
	s.tasks[t.ID] = t
	return nil
}

func (s *memoryTaskStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tasks, id)
	return nil
}

func (s *memoryTaskStore) List(context.Context) ([]PendingTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PendingTask, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
	return out, nil
}

// fileTaskStore keeps each task in a file of one directory; see
// NewFileTaskStore.
type fileTaskStore struct{ dir string }

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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("resilientmcp: task store: %w", err)
	}
	return &fileTaskStore{dir: dir}, nil
}

func (s *fileTaskStore) name(id string) string {
	sum := sha256.Sum256([]byte(id))
	return fileTaskPrefix + hex.EncodeToString(sum[:]) + ".json"
}

func (s *fileTaskStore) Put(ctx context.Context, t PendingTask) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.dir, s.name(t.ID), raw); err != nil {
		return fmt.Errorf("resilientmcp: task store: writing task %s: %w", t.ID, err)
	}
	return nil
}

func (s *fileTaskStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(s.dir, s.name(id)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resilientmcp: task store: removing task %s: %w", id, err)
	}
	atomicfile.SyncDir(s.dir)
	return nil
}

func (s *fileTaskStore) List(ctx context.Context) ([]PendingTask, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("resilientmcp: task store: %w", err)
	}
	var out []PendingTask
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, fileTaskPrefix) || !strings.HasSuffix(n, ".json") {
			continue // another store's, or a write under way (.tmp)
		}
		raw, err := os.ReadFile(filepath.Join(s.dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // delivered meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("resilientmcp: task store: %w", err)
		}
		var t PendingTask
		if err := json.Unmarshal(raw, &t); err != nil || t.ID == "" {
			return nil, fmt.Errorf("resilientmcp: task store: %s is not a stored task", filepath.Join(s.dir, n))
		}
		out = append(out, t)
	}
	return out, nil
}

// taskStoreTimeout bounds one write to the task store, so that a store
// that hangs cannot hold a call whose result is in hand.
const taskStoreTimeout = 10 * time.Second

func (c *ResilientClient) taskStore() TaskStore { return c.opts.taskStore }

// PendingTasks lists the tasks of this client's endpoint that calls
// created and whose results were not delivered: after a restart of the
// agent, those a previous process left in the TaskStore (WithTaskStore);
// while calls are under way, theirs too. Oldest first. Collect a result
// with ResumeTask.
func (c *ResilientClient) PendingTasks(ctx context.Context) ([]PendingTask, error) {
	all, err := c.taskStore().List(ctx)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(all, func(t PendingTask) bool { return t.Endpoint != c.endpoint })
	slices.SortFunc(out, func(a, b PendingTask) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// argsHash is PendingTask.ArgsHash of a call's arguments.
func argsHash(args any) string {
	raw, err := json.Marshal(args) // map keys sorted
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
