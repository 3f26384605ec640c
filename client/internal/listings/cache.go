package listings

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/singleflight"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
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
// The cache is the tool cache's (Cache, tools.go): one lock, one
// invalidation. The tools the replay decision reads are those of the same
// listings: a tools/list_changed ends both at once, a server whose identity
// changed drops both, and after a new session RefreshTools lists the tools
// again for both (the other kinds are no longer fresh after a
// re-initialization).
//
// A private answer is kept under the fingerprint of the credential the
// client sent (Host.Principal), never under the token's subject: an
// access token is opaque to its client (OAuth 2.1 §1.4), so its subject
// cannot be read in general, and the credential is exactly the
// authorization context the server answered for. A new token (a refresh, a
// rotated key) is a new context: a private answer is not served across it,
// which is strict but never wrong.

// StaleMetaKey is the key of the _meta entry that marks an answer served
// stale (StaleAge reads it): an object {"ageMs": <age in ms>, "fetchedAt":
// <RFC 3339 time>}. It is the client's own, never the server's: an answer
// the server gave is never marked.
const StaleMetaKey = "io.github.resilientmcp/stale"

// maxTTL caps the ttlMs a server gives.
const maxTTL = 24 * time.Hour

// listingStoreTimeout bounds a write to, or the one read of, the listing
// store, so that a store that hangs cannot hold a listing in hand.
const listingStoreTimeout = 5 * time.Second

// listingStoreRefresh is how often an unchanged answer is written to the
// store again, so that the age of a listing served from it after a
// restart is at most this much older than it should be (never younger).
const listingStoreRefresh = time.Minute

// Cache is what the client knows of the server's answers: the cache of
// listings and reads, and the server's tools, for the one decision that
// needs them: whether a tools/call whose outcome is unknown may be sent
// again. The client fills the tools itself, so that the decision is the
// same whether or not the caller ever lists tools: the first time a
// decision needs a tool it has not seen (or after the server announced a
// change), one tools/list is sent for every goroutine that needs it. A call
// that succeeds never waits for it.
//
// The client holds it by value (its size counts in the client's); Init
// readies it. Safe for concurrent use once Init has returned.
//
// Lock order: storeWriter.mu → the lock of Host.StartBackground (put
// counts its goroutine under it, the client's Close barrier); Cache.mu is
// a leaf, and neither calls the Host nor sends a request under it.
type Cache struct {
	host    Host
	listing singleflight.Group // the listing of tools under way, shared by every caller that needs it

	// mu guards the fields below; a leaf, and no request is sent under it.
	mu    sync.Mutex
	tools map[string]mcp.Tool // nil until the tools were first listed
	gen   uint64              // counts changes announced by the server
	fresh uint64              // gen of the listing in tools; != gen: stale
	// listings are the answers to listings and reads, tools/list's among
	// them: the tools above are theirs.
	listings entries

	writer *storeWriter // writes to WithListingStore's store (store.go); nil without one
}

// Init readies the cache for its client.
func (l *Cache) Init(h Host) {
	l.host = h
	if h.Store() != nil {
		l.writer = &storeWriter{}
	}
}

// Listening reports whether an answer with a ttl was cached: the
// stateless era's sessions then listen for the list changes that end it.
func (l *Cache) Listening() bool { return l.listings.listen.Load() }

// StaleAge reports whether a result's _meta marks it as served stale, and
// its age: client.Stale.
func StaleAge(meta *mcp.Meta) (age time.Duration, ok bool) {
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

// kind is what a listing lists: each kind has its own announcement
// of change.
type kind uint8

const (
	kindTools kind = iota
	kindPrompts
	kindResources
	kindTemplates
	kindRead
	kindCount
)

// key is one answer the cache keeps.
type key struct {
	method string
	page   bool   // one page (…ByPage), not every page from arg
	arg    string // the cursor a listing starts from; a read's URI, and its arguments as JSON
}

// entry is an answer kept: the server's result, never changed (the
// caller gets copies), and what serving it again depends on.
type entry struct {
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

// slot holds a key's answers: the public one and the private one of
// the last credential.
type slot struct{ public, private *entry }

// entries is the cache's part of Cache, guarded by its mu.
type entries struct {
	slots map[key]*slot
	// gen counts the changes announced, by kind but tools (Cache.gen
	// counts theirs): kind k's is gen[k-1], 8 B less for every client
	// (TestClientSizeClass).
	gen         [kindCount - 1]uint64
	server      string // the identity of the server the client last opened a session with
	storeRead   bool   // the store was read (once per client, when a stale answer is first wanted)
	staleLogged bool   // a stale answer was logged since the last fresh one
	// listen: an answer with a ttl was cached, so the stateless era's
	// sessions listen for the list changes that end it (Listening).
	// Atomic, not guarded: read under a session's notify.Streams.mu.
	listen atomic.Bool
}

// genLocked is kind's change count.
func (l *Cache) genLocked(k kind) uint64 {
	if k == kindTools {
		return l.gen
	}
	return l.listings.gen[k-1]
}

// entryFor is the answer to serve for key to principal: the newest of the
// public one and the private one of principal.
func (l *entries) entryFor(k key, principal string) *entry {
	sl := l.slots[k]
	if sl == nil {
		return nil
	}
	e := sl.public
	if p := sl.private; p != nil && p.principal == principal && (e == nil || p.fetched.After(e.fetched)) {
		e = p
	}
	return e
}

// keep puts e in k's slot.
func (l *entries) keep(k key, e *entry) {
	if l.slots == nil {
		l.slots = map[key]*slot{}
	}
	sl := l.slots[k]
	if sl == nil {
		sl = new(slot)
		l.slots[k] = sl
	}
	if e.principal == "" {
		sl.public = e
	} else {
		sl.private = e
	}
}

// Get is a listing or a read through the cache: answered from it within
// the ttl, else asked of the server through the client's one call path
// (Host.Call, Host.Run), and, if the server cannot answer, from the last
// good answer, marked stale. Only with the cache on (Host.Off false): off,
// the client sends the request as it would without a cache.
func Get[T any](ctx context.Context, l *Cache, sp *Spec[T]) (T, error) {
	h := l.host
	// A call with an invalid option fails with it (run), cached or not.
	fresh := h.Fresh(ctx)
	if !fresh {
		if res, ok := cachedFresh(l, sp); ok {
			if err := h.Call(ctx, string(sp.method), nil); err != nil { // answered by the cache
				var zero T
				return zero, err
			}
			return res, nil
		}
	}
	var out T
	err := h.Call(ctx, string(sp.method), func(ctx context.Context) error {
		l.mu.Lock()
		gen := l.genLocked(sp.kind)
		l.mu.Unlock()
		var server string
		err := h.Run(ctx, string(sp.method), func(ctx context.Context, s Session) error {
			var err error
			out, err = sp.fetch(ctx, h, s)
			server = s.Identity()
			return err
		})
		if err == nil {
			if info := (*sp.meta(out)).ServerInfo(); info != nil {
				// 2026-07-28's servers name themselves in every result: a
				// restart into another version shows here, in an era that
				// opens no session to show it.
				server = info.Name + " " + info.Version
			}
			l.putListing(sp.key, rememberListing(l, sp, out, gen, server))
			return nil
		}
		var zero T
		if fresh {
			// Fresh asks for the server's answer: if there is none, the
			// caller learns that, and does not get the cache's instead.
			out = zero
			return err
		}
		res, ok := staleAnswer(ctx, l, sp, err)
		if !ok {
			out = zero
			return err
		}
		out = res
		return nil
	})
	return out, err
}

// cachedFresh is the cached answer to serve within its ttl, if there is one.
func cachedFresh[T any](l *Cache, sp *Spec[T]) (T, bool) {
	var zero T
	now := time.Now()
	principal := l.principal()
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := &l.listings
	e := ls.entryFor(sp.key, principal)
	if e == nil || e.fromStore || !e.hasTTL || e.gen != l.genLocked(sp.kind) ||
		e.server != ls.server || !now.Before(e.fetched.Add(e.ttl)) {
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
func rememberListing[T any](l *Cache, sp *Spec[T], res T, gen uint64, server string) *entry {
	ttlMs, scope := sp.hints(res)
	e := &entry{value: sp.clone(res), fetched: time.Now(), server: server, gen: gen}
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
		e.principal = l.principal()
	}
	l.mu.Lock()
	ls := &l.listings
	// First: a changed identity drops the old server's tools, not these.
	changed := l.serverSeenLocked(server)
	if sp.remember != nil {
		sp.remember(res, gen)
	}
	var prev *entry
	if sl := ls.slots[sp.key]; sl != nil {
		prev = sl.public
		if e.principal != "" {
			prev = sl.private
		}
	}
	if prev != nil && prev.principal == e.principal {
		e.putHash, e.putAt = prev.putHash, prev.putAt // when the store last had it
	}
	ls.keep(sp.key, e)
	ls.staleLogged = false
	l.mu.Unlock()
	l.logServerChange(changed)
	if e.ttl > 0 && !ls.listen.Load() && ls.listen.CompareAndSwap(false, true) {
		// In the stateless era, notifications come only as asked for.
		l.host.Relisten()
	}
	return e
}

// toolsListed keeps a complete tools/list the client made itself (to
// decide a replay, or after a reconnect) as the cache's answer to ListTools:
// one listing, one place. remember: it also fills the replay decision's
// tools, and the store; without, it is RefreshTools' (which fills the tools
// itself), in the dial, which waits for no store.
func (l *Cache) toolsListed(res *mcp.ListToolsResult, gen uint64, s Session, remember bool) {
	sp := l.ToolsSpec(mcp.ListToolsRequest{}, false)
	if l.host.Off() {
		if remember {
			l.mu.Lock()
			sp.remember(res, gen)
			l.mu.Unlock()
		}
		return
	}
	if !remember {
		// RefreshTools, in the dial: the session waits for nothing else.
		sp.remember = nil
		rememberListing(l, sp, res, gen, s.Identity())
		return
	}
	l.putListing(sp.key, rememberListing(l, sp, res, gen, s.Identity()))
}

// anonymous is the principal of a private answer fetched without a
// credential: shared by every client of the endpoint that sends none.
const anonymous = "-"

// principal is the key of the client's private answers: the fingerprint of
// the credential it last sent, or anonymous.
func (l *Cache) principal() string {
	if p := l.host.Principal(); p != "" {
		return p
	}
	return anonymous
}

// staleAnswer is the last good answer to serve in place of err, marked
// stale, if the policy allows it.
func staleAnswer[T any](ctx context.Context, l *Cache, sp *Spec[T], err error) (T, bool) {
	var zero T
	h := l.host
	maxStale := h.MaxStale(sp.kind == kindRead)
	if maxStale <= 0 {
		return zero, false
	}
	f := h.StaleFailure(ctx, err)
	if !policy.StaleIfError(f, 0, maxStale) {
		return zero, false // whatever the age
	}
	l.readListingStore(ctx)
	principal := l.principal()
	now := time.Now()
	l.mu.Lock()
	ls := &l.listings
	e := ls.entryFor(sp.key, principal)
	switch {
	case e == nil:
	case sp.kind == kindRead && !e.hasTTL:
		e = nil // a resource the server did not mark cacheable may be live
	case ls.server != "" && e.server != "" && e.server != ls.server:
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
	logIt := ok && !ls.staleLogged
	if logIt {
		ls.staleLogged = true
	}
	l.mu.Unlock()
	if derr != nil {
		h.Log().Warn("a stored listing could not be read; it is not served", "method", sp.method, "err", derr)
	}
	if !ok {
		return zero, false
	}
	age := max(now.Sub(e.fetched), 0)
	res = sp.clone(res)
	mark(sp.meta(res), staleMark{AgeMs: age.Milliseconds(), FetchedAt: e.fetched})
	h.ServedStale(ctx)
	if logIt {
		h.Log().Warn("the server cannot answer; serving the last good listings, marked stale, until it can",
			"method", sp.method, "age", age.Round(time.Millisecond), "err", wire.Describe(err))
	}
	return res, true
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

// Notified is what a server's notification means for the cache: a list
// changed (the tools' too: MarkToolsStale), or a resource was updated.
func (l *Cache) Notified(n mcp.JSONRPCNotification) {
	l.invalidate(n)
	if n.Method == string(mcp.MethodNotificationToolsListChanged) {
		l.MarkToolsStale()
	}
}

// invalidate is what a server's notification means for the cache of
// listings: a list changed, or a resource was updated.
func (l *Cache) invalidate(n mcp.JSONRPCNotification) {
	if l.host.Off() {
		return
	}
	var kinds []kind
	switch n.Method {
	case string(mcp.MethodNotificationPromptsListChanged):
		kinds = []kind{kindPrompts}
	case string(mcp.MethodNotificationResourcesListChanged):
		kinds = []kind{kindResources, kindTemplates}
	case string(mcp.MethodNotificationResourceUpdated):
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		l.mu.Lock()
		for k, sl := range l.listings.slots {
			if k.method == string(mcp.MethodResourcesRead) && readURI(k.arg) == uri {
				for _, e := range []*entry{sl.public, sl.private} {
					if e != nil {
						e.hasTTL, e.ttl = false, 0 // kept as the last good one; no longer fresh
					}
				}
			}
		}
		l.mu.Unlock()
		return
	default:
		return // tools/list_changed: MarkToolsStale
	}
	l.mu.Lock()
	for _, k := range kinds {
		l.listings.gen[k-1]++
	}
	l.mu.Unlock()
}

// Opened is what a new session, next, replacing prev (zero for none)
// means for the cache: a change of the server is logged
// (noteServerChange), the listings learn of the session (opened), and
// the tools, if ever listed, are listed again (RefreshTools). renewed:
// the session is a re-initialization, or Initialize with a new request.
func (l *Cache) Opened(ctx context.Context, prev, next Session, renewed bool) {
	l.noteServerChange(prev, next)
	l.opened(next, renewed)
	l.RefreshTools(ctx, next)
}

// opened is what a new session means for the cache: after a
// re-initialization (or Initialize with a new request) nothing cached is
// fresh any more (tools/list's answer is replaced by RefreshTools'), and a
// server whose identity changed makes every answer kept another server's:
// they are dropped, and not served stale.
func (l *Cache) opened(s Session, renewed bool) {
	if l.host.Off() {
		return // RefreshTools sees to the replay decision's tools, as it always did
	}
	l.mu.Lock()
	ls := &l.listings
	changed := l.serverSeenLocked(s.Identity())
	if renewed {
		// Tools are not counted here: RefreshTools lists them again on
		// every new session, for the replay decision and ListTools at
		// once, and until it has, the last listing serves both.
		for i := range ls.gen {
			ls.gen[i]++
		}
	}
	l.mu.Unlock()
	l.logServerChange(changed)
}

// serverSeenLocked records the server's identity as a session or a result
// gave it: another than before makes every answer kept another server's,
// dropped and never served stale, and its tools' annotations too: a replay
// is never decided on another server's word (the next decision lists the
// tools of this one).
// It returns the identities, if they changed (logged by logServerChange,
// once the lock is released: the logger's handler is the user's code).
func (l *Cache) serverSeenLocked(id string) (changed []string) {
	ls := &l.listings
	if id == "" || id == ls.server {
		return nil
	}
	if ls.server != "" {
		ls.slots = nil
		if l.tools != nil {
			l.tools = nil
			l.gen++
		}
		changed = []string{ls.server, id}
	}
	ls.server = id
	return changed
}

func (l *Cache) logServerChange(changed []string) {
	if changed != nil {
		l.host.Log().Info("the server's identity changed; its cached listings are dropped", "from", changed[0], "to", changed[1])
	}
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
