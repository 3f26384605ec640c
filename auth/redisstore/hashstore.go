package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// hashStore keeps records of one kind as the fields of one Redis hash,
// each its key and the record as JSON: HSET, HDEL and HGETALL, each one
// atomic command, so no lock is needed. It is the shape the TaskStore and
// the ListingStore share (their interfaces differ only in the record).
// Safe for concurrent use by any number of goroutines, processes and
// machines sharing the Redis.
type hashStore[T any] struct {
	rdb  redis.UniversalClient
	hash string         // the Redis key of the hash: the prefix and a name
	what string         // "task store", for errors
	key  func(T) string // a record's field
}

// newHashStore is the hash <prefix><name> on rdb, the prefix defaultPrefix
// unless opts (New's) give one with WithPrefix; the other options do not
// apply to it.
func newHashStore[T any](rdb redis.UniversalClient, opts []Option, defaultPrefix, name, what string, key func(T) string) hashStore[T] {
	s := &Store{prefix: defaultPrefix, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return hashStore[T]{rdb: rdb, hash: s.prefix + name, what: what, key: key}
}

// Put writes v under its key, replacing what was there.
func (s *hashStore[T]) Put(ctx context.Context, v T) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := s.rdb.HSet(ctx, s.hash, s.key(v), data).Err(); err != nil {
		return fmt.Errorf("redisstore: %s: %w", s.what, err)
	}
	return nil
}

// Delete removes the record under key; one that is not there is no error.
func (s *hashStore[T]) Delete(ctx context.Context, key string) error {
	if err := s.rdb.HDel(ctx, s.hash, key).Err(); err != nil {
		return fmt.Errorf("redisstore: %s: %w", s.what, err)
	}
	return nil
}

// List returns every record stored, in no particular order.
func (s *hashStore[T]) List(ctx context.Context) ([]T, error) {
	all, err := s.rdb.HGetAll(ctx, s.hash).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: %s: %w", s.what, err)
	}
	out := make([]T, 0, len(all))
	for field, data := range all {
		var v T
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return nil, fmt.Errorf("redisstore: %s: the field %s of %s is not a record of it", s.what, field, s.hash)
		}
		out = append(out, v)
	}
	return out, nil
}
