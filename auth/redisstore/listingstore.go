package redisstore

import (
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
// Its methods are Put, Delete and List (store.ListingStore). A
// ListingStore is safe for concurrent use by any number of goroutines,
// processes and machines sharing the Redis.
type ListingStore struct{ hashStore[store.StoredListing] }

var _ store.ListingStore = (*ListingStore)(nil)

// NewListingStore returns the ListingStore on rdb. It takes the grant
// store's options (New): WithPrefix is put before its key (default
// "resilientmcp:listings:"); the others do not apply to it.
func NewListingStore(rdb redis.UniversalClient, opts ...Option) *ListingStore {
	return &ListingStore{newHashStore(rdb, opts, "resilientmcp:listings:", "listings", "listing store", func(l store.StoredListing) string { return l.Key })}
}
