package client

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resilientmcp/resilientmcp/client/store"
)

// PendingTask is a task a call of the client created and whose result has
// not been delivered yet, as a TaskStore keeps it: store.PendingTask.
type PendingTask = store.PendingTask

// TaskStore keeps the ids of the tasks a client's calls created until
// their results are delivered: store.TaskStore, which says what the client
// expects of one.
type TaskStore = store.TaskStore

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

// NewFileTaskStore returns a TaskStore in dir, created (0700) if need be:
// one machine, surviving restarts of the agent. It is
// store.NewFileTaskStore, which says how it keeps them; safe for
// concurrent use by any number of goroutines and processes of the machine.
func NewFileTaskStore(dir string) (TaskStore, error) { return store.NewFileTaskStore(dir) }

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
