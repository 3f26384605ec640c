package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/resilientmcp/resilientmcp/client/store"
)

// ListingStore is a store.ListingStore in Redis: the last good listings
// and reads of every replica on every machine, so that any of them,
// restarted while the server is away, still lists what it offers (served
// stale, client.Stale). It is the TaskStore's shape and layout: the
// answers are the fields of one hash, <prefix>listings, each a
// store.StoredListing's Key and the listing as JSON: HSET, HDEL and
// HGETALL, each one atomic command, so no lock is needed. A private
// answer's key holds the fingerprint of the credential that fetched it,
// never the credential.
//
// A ListingStore is safe for concurrent use by any number of goroutines,
// processes and machines sharing the Redis.
type ListingStore struct {
	rdb redis.UniversalClient
	key string
}

var _ store.ListingStore = (*ListingStore)(nil)

// NewListingStore returns the ListingStore on rdb. It takes the grant
// store's options (New): WithPrefix is put before its key (default
// "resilientmcp:listings:"); the others do not apply to it.
func NewListingStore(rdb redis.UniversalClient, opts ...Option) *ListingStore {
	s := &Store{prefix: "resilientmcp:listings:", logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return &ListingStore{rdb: rdb, key: s.prefix + "listings"}
}

func listingUnavailable(err error) error {
	return fmt.Errorf("redisstore: listing store: %w", err)
}

// Put writes l under its key.
func (s *ListingStore) Put(ctx context.Context, l store.StoredListing) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := s.rdb.HSet(ctx, s.key, l.Key, data).Err(); err != nil {
		return listingUnavailable(err)
	}
	return nil
}

// Delete removes the answer under key.
func (s *ListingStore) Delete(ctx context.Context, key string) error {
	if err := s.rdb.HDel(ctx, s.key, key).Err(); err != nil {
		return listingUnavailable(err)
	}
	return nil
}

// List returns every answer stored.
func (s *ListingStore) List(ctx context.Context) ([]store.StoredListing, error) {
	all, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, listingUnavailable(err)
	}
	out := make([]store.StoredListing, 0, len(all))
	for key, data := range all {
		var l store.StoredListing
		if err := json.Unmarshal([]byte(data), &l); err != nil {
			return nil, fmt.Errorf("redisstore: listing store: the field %s of %s is not a stored listing", key, s.key)
		}
		out = append(out, l)
	}
	return out, nil
}
