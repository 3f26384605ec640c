package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/resilientmcp/resilientmcp/client/store"
)

// storeTimeout bounds one write to the task store, so that a store that
// hangs cannot hold a call whose result is in hand.
const storeTimeout = 10 * time.Second

// memoryStore is the default TaskStore: this process only.
type memoryStore struct {
	mu    sync.Mutex                   // a leaf
	tasks map[string]store.PendingTask // made by the first Put: every client has a store, few call tasks
}

func (s *memoryStore) Put(_ context.Context, t store.PendingTask) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks == nil {
		s.tasks = map[string]store.PendingTask{}
	}
	s.tasks[t.ID] = t
	return nil
}

func (s *memoryStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tasks, id)
	return nil
}

func (s *memoryStore) List(context.Context) ([]store.PendingTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.PendingTask, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
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
