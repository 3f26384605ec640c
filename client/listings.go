package client

import (
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/listings"
	"github.com/resilientmcp/resilientmcp/client/store"
)

// Listings and reads, cached as the server says and served stale on error
// (F48): the cache is client/internal/listings' (listings.Cache, which
// says how); here are its options and what a caller reads of it.

// StaleMetaKey is the key of the _meta entry that marks an answer served
// stale (Stale reads it): an object {"ageMs": <age in ms>, "fetchedAt":
// <RFC 3339 time>}. It is the client's own, never the server's: an answer
// the server gave is never marked.
const StaleMetaKey = listings.StaleMetaKey

// DefaultMaxStale is WithMaxStale's default for listings: 24 hours. A
// listing is what an agent tells its model the server offers; served stale,
// its cost is a tool offered that the server has since removed, whose call
// then fails with the server's own error, or the breaker's ErrUnavailable
// while it is away. A day rides out any outage someone is working on,
// including one that starts at night, and does not present a listing from
// before a weekend's deploys as the server's. Reads are not served stale
// unless WithMaxStaleReads asks.
const DefaultMaxStale = 24 * time.Hour

// listingOptions are the options of the cache.
type listingOptions struct {
	maxStale      time.Duration      // for listings; used if options.maxStaleSet, else DefaultMaxStale
	maxStaleReads time.Duration      // for resources/read; 0: never
	store         store.ListingStore // nil: memory only
	// WithListingCache(false) and whether WithMaxStale was given are
	// options.listingCacheOff and options.maxStaleSet, beside its other
	// flags: here they would cost every client 8 B of padding.
}

// maxStaleFor is how old a listing (a read, if read) may be served stale.
func (o *options) maxStaleFor(read bool) time.Duration {
	switch {
	case read:
		return o.listings.maxStaleReads
	case o.maxStaleSet:
		return o.listings.maxStale
	}
	return DefaultMaxStale
}

// WithListingCache turns the cache of listings and reads on or off.
// Default on: a listing or a resources/read whose result carries SEP-2549's
// ttlMs is served from the client's memory until it expires, with no request
// sent (a server that sends no ttlMs, or 0, is asked every time; one beyond
// 24 h is taken as 24 h), and a listing the server cannot answer is answered
// with the last good one, marked stale (WithMaxStale). In the 2026-07-28
// era, once the cache holds an answer with a ttl, the client's sessions
// listen for the list changes that end it (subscriptions/listen), as they do
// for an OnNotification handler. Off, every listing and read is sent, and
// fails as it would without a cache: the client behaves as it did before the
// cache existed.
func WithListingCache(on bool) Option {
	return optionFunc(func(o *options) { o.listingCacheOff = !on })
}

// WithMaxStale bounds the age of a listing (tools/list, prompts/list,
// resources/list, resources/templates/list) served stale: when the server
// cannot answer one (it is unreachable, the breaker is open, it answered 503
// or 429 until the deadline, the attempts ran out without an answer), the
// last good answer no older than d is returned instead of the error, marked
// in its _meta (read it with Stale), the stale answer logged once per
// outage and counted in Stats().StaleAnswers. Never for a tool call, never
// in place of the server's own answer (a JSON-RPC error), never across a
// change of the server's identity (its serverInfo's name and version), and
// never once the caller's context is cancelled. Default DefaultMaxStale
// (24 h); 0 turns stale answers off.
func WithMaxStale(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.invalidf("WithMaxStale(%v): must not be negative (0 turns stale answers off)", d)
			return
		}
		o.listings.maxStale, o.maxStaleSet = d, true
	})
}

// WithMaxStaleReads serves a resources/read the server cannot answer from
// its last good answer no older than d, as WithMaxStale does for listings;
// only a read whose result carried ttlMs, since a resource the server did
// not mark cacheable may be live data. Default 0: never.
func WithMaxStaleReads(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.invalidf("WithMaxStaleReads(%v): must not be negative (0 turns stale reads off)", d)
			return
		}
		o.listings.maxStaleReads = d
	})
}

// WithListingStore keeps the last good listings and reads in s too, so
// that an agent restarted while the server is away still lists what it
// offers (marked stale). Default none: the client's memory only.
// store.NewFileListingStore keeps them in a directory (one machine),
// auth/redisstore's NewListingStore in Redis (every replica).
func WithListingStore(s store.ListingStore) Option {
	return optionFunc(func(o *options) {
		if s == nil {
			o.invalidf("WithListingStore(nil)")
			return
		}
		o.listings.store = s
	})
}

// Fresh says that the listing or read is the server's answer or an error:
// it is asked of the server, not answered from the cache within its ttlMs,
// and if the server cannot answer, the call fails (ErrUnavailable,
// ErrOutcomeUnknown) rather than being answered stale (WithMaxStale). A
// caller that asks for fresh wants to know when there is none. Other
// methods ignore it.
func Fresh() CallOption {
	return callOptionFunc(func(o *callOptions) { o.fresh = true })
}

// Stale reports whether a result's _meta marks it as served stale: the
// server could not answer, and this is its last good answer, age old. A
// result the server gave is never marked. It reads the mark the client
// set, or the same mark after a JSON round trip.
func Stale(meta *mcp.Meta) (age time.Duration, ok bool) { return listings.StaleAge(meta) }

// ServerInfo is the identity of the server behind the session in service,
// as it gave it when the session was opened, or the zero value when there is
// none. It is read again with every new session (a re-initialization or a
// redial).
func (c *ResilientClient) ServerInfo() mcp.Implementation {
	if vs := c.sess.pool.Values(); len(vs) > 0 {
		return vs[0].result.ServerInfo
	}
	return mcp.Implementation{}
}
