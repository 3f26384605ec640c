package client

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// Listings and reads, cached as the server says and served stale on error
// (F48).
//
// SEP-2549 has the server say, on every listing (tools/list, prompts/list,
// resources/list, resources/templates/list) and resources/read result, how
// long it stays good (ttlMs) and whether it may be shared across
// authorization contexts (cacheScope). Within the ttl, the answer is served
// from the client's memory and no request is sent. Whatever the ttl, the
// last good answer is kept: when the server cannot answer (unreachable, the
// breaker open, busy until the deadline) it is served instead of the error,
// marked stale in its _meta (Stale), as RFC 5861's stale-if-error has it.
//
// The cache is the tool cache's (toolCache, tools.go): one lock, one
// invalidation. The tools the replay decision reads are those of the same
// listings: a tools/list_changed ends both at once, a server whose identity
// changed drops both, and after a new session refreshTools lists the tools
// again for both (the other kinds are no longer fresh after a
// re-initialization).
//
// A private answer is kept under the fingerprint of the credential the
// client sent (credentials below), never under the token's subject: an
// access token is opaque to its client (OAuth 2.1 §1.4), so its subject
// cannot be read in general, and the credential is exactly the
// authorization context the server answered for. A new token (a refresh, a
// rotated key) is a new context: a private answer is not served across it,
// which is strict but never wrong.

// StaleMetaKey is the key of the _meta entry that marks an answer served
// stale (Stale reads it): an object {"ageMs": <age in ms>, "fetchedAt":
// <RFC 3339 time>}. It is the client's own, never the server's: an answer
// the server gave is never marked.
const StaleMetaKey = "io.github.resilientmcp/stale"

// DefaultMaxStale is WithMaxStale's default for listings: 24 hours. A
// listing is what an agent tells its model the server offers; served stale,
// its cost is a tool offered that the server has since removed, whose call
// then fails with the server's own error, or the breaker's ErrUnavailable
// while it is away. A day rides out any outage someone is working on,
// including one that starts at night, and does not present a listing from
// before a weekend's deploys as the server's. Reads are not served stale
// unless WithMaxStaleReads asks.
const DefaultMaxStale = 24 * time.Hour

// maxTTL caps the ttlMs a server gives.
const maxTTL = 24 * time.Hour

// listingStoreTimeout bounds a write to, or the one read of, the listing
// store, so that a store that hangs cannot hold a listing in hand.
const listingStoreTimeout = 5 * time.Second

// listingStoreRefresh is how often an unchanged answer is written to the
// store again, so that the age of a listing served from it after a
// restart is at most this much older than it should be (never younger).
const listingStoreRefresh = time.Minute

// listingOptions are the options of the cache.
type listingOptions struct {
	maxStale      time.Duration // for listings; used if options.maxStaleSet, else DefaultMaxStale
	maxStaleReads time.Duration // for resources/read; 0: never
	store         ListingStore  // nil: memory only
	// WithListingCache(false) and whether WithMaxStale was given are
	// options.listingCacheOff and options.maxStaleSet, beside its other
	// flags: here they would cost every client 8 B of padding.
}

func (o *options) maxStaleFor(k listingKind) time.Duration {
	switch {
	case k == kindRead:
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
// NewFileListingStore keeps them in a directory (one machine),
// auth/redisstore's NewListingStore in Redis (every replica).
func WithListingStore(s ListingStore) Option {
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
func Stale(meta *mcp.Meta) (age time.Duration, ok bool) {
	if meta == nil {
		return 0, false
	}
	switch m := meta.AdditionalFields[StaleMetaKey].(type) {
	case staleMark:
		return time.Duration(m.AgeMs) * time.Millisecond, true
	case *staleMark:
		if m != nil {
			return time.Duration(m.AgeMs) * time.Millisecond, true
		}
	case map[string]any:
		switch ms := m["ageMs"].(type) {
		case float64:
			return time.Duration(ms * float64(time.Millisecond)), true
		case json.Number:
			if f, err := ms.Float64(); err == nil {
				return time.Duration(f * float64(time.Millisecond)), true
			}
		case int64:
			return time.Duration(ms) * time.Millisecond, true
		}
	}
	return 0, false
}

// staleMark is StaleMetaKey's value.
type staleMark struct {
	AgeMs     int64     `json:"ageMs"`
	FetchedAt time.Time `json:"fetchedAt"`
}

// listingKind is what a listing lists: each kind has its own announcement
// of change.
type listingKind uint8

const (
	kindTools listingKind = iota
	kindPrompts
	kindResources
	kindTemplates
	kindRead
	kindCount
)

// listingKey is one answer the cache keeps.
type listingKey struct {
	method string
	page   bool   // one page (…ByPage), not every page from arg
	arg    string // the cursor a listing starts from; a read's URI, and its arguments as JSON
}

// listingEntry is an answer kept: the server's result, never changed (the
// caller gets copies), and what serving it again depends on.
type listingEntry struct {
	value     any             // *mcp.ListToolsResult, ...; nil until raw is decoded
	raw       json.RawMessage // from the store, decoded on first use
	fetched   time.Time
	ttl       time.Duration
	hasTTL    bool   // the server gave ttlMs
	principal string // the credential's fingerprint, for a private answer; "" for a public one
	server    string // the server's identity when it answered
	gen       uint64 // the kind's change count when it was asked for
	fromStore bool   // read from the store: a previous process's, only ever served stale
	putHash   [32]byte
	putAt     time.Time
}

// listingSlot holds a key's answers: the public one and the private one of
// the last credential.
type listingSlot struct{ public, private *listingEntry }

// listingEntries is the cache's part of toolCache, guarded by its mu.
type listingEntries struct {
	slots       map[listingKey]*listingSlot
	gen         [kindCount]uint64 // changes announced, by kind (tools: toolCache.gen)
	server      string            // the identity of the server the client last opened a session with
	storeRead   bool              // the store was read (once per client, when a stale answer is first wanted)
	staleLogged bool              // a stale answer was logged since the last fresh one
	// listen: an answer with a ttl was cached, so the stateless era's
	// sessions listen for the list changes that end it (notify.Messages.SubscriptionFilter).
	// Atomic, not guarded: read under a session's notify.Streams.mu.
	listen atomic.Bool
}

// genLocked is kind's change count.
func (c *ResilientClient) listingGenLocked(k listingKind) uint64 {
	if k == kindTools {
		return c.tools.gen
	}
	return c.tools.listings.gen[k]
}

// entryFor is the answer to serve for key to principal: the newest of the
// public one and the private one of principal.
func (l *listingEntries) entryFor(key listingKey, principal string) *listingEntry {
	sl := l.slots[key]
	if sl == nil {
		return nil
	}
	e := sl.public
	if p := sl.private; p != nil && p.principal == principal && (e == nil || p.fetched.After(e.fetched)) {
		e = p
	}
	return e
}

// keep puts e in key's slot.
func (l *listingEntries) keep(key listingKey, e *listingEntry) {
	if l.slots == nil {
		l.slots = map[listingKey]*listingSlot{}
	}
	sl := l.slots[key]
	if sl == nil {
		sl = new(listingSlot)
		l.slots[key] = sl
	}
	if e.principal == "" {
		sl.public = e
	} else {
		sl.private = e
	}
}

// listingSpec is how one method is cached: what it is, how it is asked,
// and how its result is handled.
type listingSpec[T any] struct {
	method mcp.MCPMethod
	kind   listingKind
	key    listingKey
	fetch  func(context.Context, *mcpclient.Client) (T, error)
	// hints are the SEP-2549 fields of a result; meta its _meta's
	// pointer, to mark a copy.
	hints func(T) (*int64, mcp.CacheScope)
	meta  func(T) **mcp.Meta
	// clone is a copy of a result that the caller may change at its top
	// level (its lists); what the lists hold is shared.
	clone  func(T) T
	decode func(json.RawMessage) (T, error)
	// remember, if set, runs with a fresh answer under toolCache.mu, with
	// the change count the listing began with: tools/list's fills the
	// replay decision's tools.
	remember func(res T, gen uint64)
}

// cached is a listing or a read through the cache: answered from it within
// the ttl, else asked of the server through the one call path, and, if the
// server cannot answer, from the last good answer, marked stale. Off
// (WithListingCache(false)), it is call.
func cached[T any](ctx context.Context, c *ResilientClient, sp *listingSpec[T]) (T, error) {
	if c.opts.listingCacheOff {
		return mcpCall(ctx, c, sp.method, "", sp.fetch)
	}
	fresh := false
	if o := callOptionsOf(ctx); o != nil {
		// A call with an invalid option fails with it (run), cached or not.
		fresh = o.fresh || o.invalid != nil
	}
	if !fresh {
		if res, ok := cachedFresh(c, sp); ok {
			if err := c.call(ctx, string(sp.method), "", nil); err != nil { // answered by the cache
				var zero T
				return zero, err
			}
			return res, nil
		}
	}
	var out T
	err := c.call(ctx, string(sp.method), "", func(ctx context.Context) error {
		c.tools.mu.Lock()
		gen := c.listingGenLocked(sp.kind)
		c.tools.mu.Unlock()
		var server string
		err := c.run(ctx, string(sp.method), "", func(ctx context.Context, s *session) error {
			var err error
			out, err = sp.fetch(ctx, s.mc)
			server = serverIdentity(s)
			return err
		})
		if err == nil {
			if info := (*sp.meta(out)).ServerInfo(); info != nil {
				// 2026-07-28's servers name themselves in every result: a
				// restart into another version shows here, in an era that
				// opens no session to show it.
				server = info.Name + " " + info.Version
			}
			c.putListing(sp.key, rememberListing(c, sp, out, gen, server))
			return nil
		}
		var zero T
		if fresh {
			// Fresh asks for the server's answer: if there is none, the
			// caller learns that, and does not get the cache's instead.
			out = zero
			return err
		}
		res, ok := staleAnswer(ctx, c, sp, err)
		if !ok {
			out = zero
			return err
		}
		out = res
		c.obs.fromCache(ctx, true)
		return nil
	})
	return out, err
}

// cachedFresh is the cached answer to serve within its ttl, if there is one.
func cachedFresh[T any](c *ResilientClient, sp *listingSpec[T]) (T, bool) {
	var zero T
	now := time.Now()
	principal := c.principal()
	c.tools.mu.Lock()
	defer c.tools.mu.Unlock()
	l := &c.tools.listings
	e := l.entryFor(sp.key, principal)
	if e == nil || e.fromStore || !e.hasTTL || e.gen != c.listingGenLocked(sp.kind) ||
		e.server != l.server || !now.Before(e.fetched.Add(e.ttl)) {
		return zero, false
	}
	res, ok := e.value.(T)
	if !ok {
		return zero, false
	}
	return sp.clone(res), true
}

// rememberListing keeps a fresh answer, and returns it as kept (for the
// store: putListing).
func rememberListing[T any](c *ResilientClient, sp *listingSpec[T], res T, gen uint64, server string) *listingEntry {
	ttlMs, scope := sp.hints(res)
	e := &listingEntry{value: sp.clone(res), fetched: time.Now(), server: server, gen: gen}
	if ttlMs != nil {
		// 0 (or less): stale at once, but the server marked it cacheable.
		// A ttl beyond a day is taken as a day: a server's mistake (or a
		// hostile one) must not pin an answer for ever, or overflow.
		e.hasTTL = true
		e.ttl = time.Duration(min(max(*ttlMs, 0), maxTTL.Milliseconds())) * time.Millisecond
	}
	if scope != mcp.CacheScopePublic {
		// Absent is private: mcp-go's servers default to it, and sharing
		// what was meant for one principal is the one mistake not to make.
		e.principal = c.principal()
	}
	c.tools.mu.Lock()
	l := &c.tools.listings
	// First: a changed identity drops the old server's tools, not these.
	changed := c.serverSeenLocked(server)
	if sp.remember != nil {
		sp.remember(res, gen)
	}
	var prev *listingEntry
	if sl := l.slots[sp.key]; sl != nil {
		prev = sl.public
		if e.principal != "" {
			prev = sl.private
		}
	}
	if prev != nil && prev.principal == e.principal {
		e.putHash, e.putAt = prev.putHash, prev.putAt // when the store last had it
	}
	l.keep(sp.key, e)
	l.staleLogged = false
	c.tools.mu.Unlock()
	c.logServerChange(changed)
	if e.ttl > 0 && !l.listen.Load() && l.listen.CompareAndSwap(false, true) {
		// In the stateless era, notifications come only as asked for.
		for _, s := range c.pool.Values() {
			if !s.sessionEra {
				c.messages.Relisten(s)
			}
		}
	}
	return e
}

// toolsListed keeps a complete tools/list the client made itself (to
// decide a replay, or after a reconnect) as the cache's answer to ListTools:
// one listing, one place. remember: it also fills the replay decision's
// tools, and the store; without, it is refreshTools' (which fills the tools
// itself), in the dial, which waits for no store.
func (c *ResilientClient) toolsListed(res *mcp.ListToolsResult, gen uint64, s *session, remember bool) {
	sp := c.toolsSpec(mcp.ListToolsRequest{}, false)
	if c.opts.listingCacheOff {
		if remember {
			c.tools.mu.Lock()
			sp.remember(res, gen)
			c.tools.mu.Unlock()
		}
		return
	}
	if !remember {
		// refreshTools, in the dial: the session waits for nothing else.
		sp.remember = nil
		rememberListing(c, sp, res, gen, serverIdentity(s))
		return
	}
	c.putListing(sp.key, rememberListing(c, sp, res, gen, serverIdentity(s)))
}

// anonymous is the principal of a private answer fetched without a
// credential: shared by every client of the endpoint that sends none.
const anonymous = "-"

// principal is the key of the client's private answers: the fingerprint of
// the credential it last sent, or anonymous.
func (c *ResilientClient) principal() string {
	if p := c.credentials.Current(); p != "" {
		return p
	}
	return anonymous
}

// staleAnswer is the last good answer to serve in place of err, marked
// stale, if the policy allows it.
func staleAnswer[T any](ctx context.Context, c *ResilientClient, sp *listingSpec[T], err error) (T, bool) {
	var zero T
	maxStale := c.opts.maxStaleFor(sp.kind)
	if maxStale <= 0 {
		return zero, false
	}
	f := policy.StaleFailure{
		NotAnswered: errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown),
		Answered: errors.Is(err, ErrResponseTooLarge) || errors.Is(err, ErrAuthorizationRequired) ||
			errors.As(err, new(*InsufficientScopeError)) || serverAnswered(err),
		CallerCancelled: errors.Is(ctx.Err(), context.Canceled),
		Closed:          errors.Is(err, ErrClosed) || c.closed.Load(),
	}
	if !policy.StaleIfError(f, 0, maxStale) {
		return zero, false // whatever the age
	}
	c.readListingStore(ctx)
	principal := c.principal()
	now := time.Now()
	c.tools.mu.Lock()
	l := &c.tools.listings
	e := l.entryFor(sp.key, principal)
	switch {
	case e == nil:
	case sp.kind == kindRead && !e.hasTTL:
		e = nil // a resource the server did not mark cacheable may be live
	case l.server != "" && e.server != "" && e.server != l.server:
		e = nil // another server's
	case !policy.StaleIfError(f, max(now.Sub(e.fetched), 0), maxStale):
		e = nil
	}
	var derr error
	if e != nil && e.value == nil && e.raw != nil {
		var v T
		if v, derr = sp.decode(e.raw); derr == nil {
			e.value, e.raw = v, nil
		}
	}
	var res T
	ok := false
	if e != nil {
		res, ok = e.value.(T)
	}
	logIt := ok && !l.staleLogged
	if logIt {
		l.staleLogged = true
	}
	c.tools.mu.Unlock()
	if derr != nil {
		c.log.Warn("a stored listing could not be read; it is not served", "method", sp.method, "err", derr)
	}
	if !ok {
		return zero, false
	}
	age := max(now.Sub(e.fetched), 0)
	res = sp.clone(res)
	mark(sp.meta(res), staleMark{AgeMs: age.Milliseconds(), FetchedAt: e.fetched})
	c.stats.staleAnswers.Add(1)
	if logIt {
		c.log.Warn("the server cannot answer; serving the last good listings, marked stale, until it can",
			"method", sp.method, "age", age.Round(time.Millisecond), "err", describe(err))
	}
	return res, true
}

// serverAnswered reports whether err ends a call whose last attempt the
// server answered with a JSON-RPC error: resent for a retryable code
// (WithRetryableRPCCodes) until the retries were spent, it is still the
// server's answer, never masked by a stale one.
func serverAnswered(err error) bool {
	ce := new(callError)
	return errors.As(err, &ce) && ce.answered
}

// mark sets the stale mark in a copy of *meta.
func mark(meta **mcp.Meta, m staleMark) {
	next := &mcp.Meta{AdditionalFields: map[string]any{}}
	if *meta != nil {
		next.ProgressToken = (*meta).ProgressToken
		for k, v := range (*meta).AdditionalFields {
			next.AdditionalFields[k] = v
		}
	}
	next.AdditionalFields[StaleMetaKey] = m
	*meta = next
}

// invalidateListings is what a server's notification means for the cache:
// a list changed, or a resource was updated.
func (c *ResilientClient) invalidateListings(n mcp.JSONRPCNotification) {
	if c.opts.listingCacheOff {
		return
	}
	var kinds []listingKind
	switch n.Method {
	case string(mcp.MethodNotificationPromptsListChanged):
		kinds = []listingKind{kindPrompts}
	case string(mcp.MethodNotificationResourcesListChanged):
		kinds = []listingKind{kindResources, kindTemplates}
	case string(mcp.MethodNotificationResourceUpdated):
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		c.tools.mu.Lock()
		for k, sl := range c.tools.listings.slots {
			if k.method == string(mcp.MethodResourcesRead) && readURI(k.arg) == uri {
				for _, e := range []*listingEntry{sl.public, sl.private} {
					if e != nil {
						e.hasTTL, e.ttl = false, 0 // kept as the last good one; no longer fresh
					}
				}
			}
		}
		c.tools.mu.Unlock()
		return
	default:
		return // tools/list_changed: markToolsStale
	}
	c.tools.mu.Lock()
	for _, k := range kinds {
		c.tools.listings.gen[k]++
	}
	c.tools.mu.Unlock()
}

// listingsOpened is what a new session means for the cache: after a
// re-initialization (or Initialize with a new request) nothing cached is
// fresh any more (tools/list's answer is replaced by refreshTools'), and a
// server whose identity changed makes every answer kept another server's:
// they are dropped, and not served stale.
func (c *ResilientClient) listingsOpened(s *session, reason OpenReason) {
	if c.opts.listingCacheOff {
		return // refreshTools sees to the replay decision's tools, as it always did
	}
	c.tools.mu.Lock()
	l := &c.tools.listings
	changed := c.serverSeenLocked(serverIdentity(s))
	if reason == OpenReinitialize || reason == OpenRequested {
		// Tools are not counted here: refreshTools lists them again on
		// every new session, for the replay decision and ListTools at
		// once, and until it has, the last listing serves both.
		for k := range l.gen {
			l.gen[k]++
		}
	}
	c.tools.mu.Unlock()
	c.logServerChange(changed)
}

// serverSeenLocked records the server's identity as a session or a result
// gave it: another than before makes every answer kept another server's,
// dropped and never served stale, and its tools' annotations too: a replay
// is never decided on another server's word (the next decision lists the
// tools of this one).
// It returns the identities, if they changed (logged by logServerChange,
// once the lock is released: the logger's handler is the user's code).
func (c *ResilientClient) serverSeenLocked(id string) (changed []string) {
	l := &c.tools.listings
	if id == "" || id == l.server {
		return nil
	}
	if l.server != "" {
		l.slots = nil
		if c.tools.tools != nil {
			c.tools.tools = nil
			c.tools.gen++
		}
		changed = []string{l.server, id}
	}
	l.server = id
	return changed
}

func (c *ResilientClient) logServerChange(changed []string) {
	if changed != nil {
		c.log.Info("the server's identity changed; its cached listings are dropped", "from", changed[0], "to", changed[1])
	}
}

// serverIdentity is the server's identity as its session gave it.
func serverIdentity(s *session) string {
	if s == nil || s.result == nil {
		return ""
	}
	return s.result.ServerInfo.Name + " " + s.result.ServerInfo.Version
}

// readURI is the URI of a read's key argument.
func readURI(arg string) string {
	for i := 0; i < len(arg); i++ {
		if arg[i] == 0 {
			return arg[:i]
		}
	}
	return arg
}
