package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/resilientmcp/resilientmcp/client/store"
)

// TaskStore is a store.TaskStore in Redis: the ids of the tasks an
// agent's calls created, shared by every replica on every machine, so that
// any of them, restarted, finds them (client.PendingTasks) and collects
// their results (client.ResumeTask). Tasks are the fields of one hash,
// <prefix>pending, each a task id and its store.PendingTask as JSON:
// HSET, HDEL and HGETALL, each one atomic command, so no lock is needed.
// Turn persistence on (appendonly) if a restart of Redis must not forget
// them.
//
// A TaskStore is safe for concurrent use by any number of goroutines,
// processes and machines sharing the Redis.
type TaskStore struct {
	rdb redis.UniversalClient
	key string
}

var _ store.TaskStore = (*TaskStore)(nil)

// NewTaskStore returns the TaskStore on rdb. It takes the grant store's
// options (New): WithPrefix is put before its key (default
// "resilientmcp:tasks:"); the others do not apply to it.
func NewTaskStore(rdb redis.UniversalClient, opts ...Option) *TaskStore {
	s := &Store{prefix: "resilientmcp:tasks:", logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return &TaskStore{rdb: rdb, key: s.prefix + "pending"}
}

func taskUnavailable(err error) error {
	return fmt.Errorf("redisstore: task store: %w", err)
}

// Put writes t under its id.
func (s *TaskStore) Put(ctx context.Context, t store.PendingTask) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := s.rdb.HSet(ctx, s.key, t.ID, data).Err(); err != nil {
		return taskUnavailable(err)
	}
	return nil
}

// Delete removes the task id.
func (s *TaskStore) Delete(ctx context.Context, id string) error {
	if err := s.rdb.HDel(ctx, s.key, id).Err(); err != nil {
		return taskUnavailable(err)
	}
	return nil
}

// List returns every task stored.
func (s *TaskStore) List(ctx context.Context) ([]store.PendingTask, error) {
	all, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, taskUnavailable(err)
	}
	out := make([]store.PendingTask, 0, len(all))
	for id, data := range all {
		var t store.PendingTask
		if err := json.Unmarshal([]byte(data), &t); err != nil {
			return nil, fmt.Errorf("redisstore: task store: the field %s of %s is not a stored task", id, s.key)
		}
		out = append(out, t)
	}
	return out, nil
}
