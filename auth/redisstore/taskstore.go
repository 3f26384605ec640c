package redisstore

import (
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
// Its methods are Put, Delete and List (store.TaskStore). A TaskStore is
// safe for concurrent use by any number of goroutines,
// processes and machines sharing the Redis.
type TaskStore struct{ hashStore[store.PendingTask] }

var _ store.TaskStore = (*TaskStore)(nil)

// NewTaskStore returns the TaskStore on rdb. It takes the grant store's
// options (New): WithPrefix is put before its key (default
// "resilientmcp:tasks:"); the others do not apply to it.
func NewTaskStore(rdb redis.UniversalClient, opts ...Option) *TaskStore {
	return &TaskStore{newHashStore(rdb, opts, "resilientmcp:tasks:", "pending", "task store", func(t store.PendingTask) string { return t.ID })}
}
