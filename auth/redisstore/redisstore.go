// Package redisstore keeps OAuth grants in Redis, shared by every replica
// of an agent on every machine: an auth.Store on
// github.com/redis/go-redis/v9.
//
// A grant is a hash <prefix>grant:<id> (version, and the grant as JSON),
// id being auth.Key.ID. Its lock is a lease, <prefix>lock:<id>, taken with
// SET NX PX and a random token, renewed while the renewal runs, and
// released only by its holder (a script compares the token). A holder
// that dies releases it by expiry; the next holder notes the takeover in
// the log. A write is a compare-and-swap on the version, in a script that
// also checks that the writer still holds the lease.
//
// Locks are written here rather than taken from go-redsync/redsync: one
// Redis (or one cluster slot) needs no quorum, and redsync's Mutex would
// still leave the version check, the lease renewal that ends the renewal's
// context when it fails, and the takeover note to this package.
//
// Redis holds refresh tokens and client secrets: require authentication
// and TLS to reach it, and turn persistence on (appendonly) if a restart
// must not cost the grant (without it, the replicas write their last token
// back, but a registration made since the last token may be lost).
package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/resilientmcp/resilientmcp/auth"
)

// Store is an auth.Store in Redis. It is safe for concurrent use by any
// number of goroutines, processes and machines sharing the Redis.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	lease  time.Duration
	logger *slog.Logger
}

// Option configures a Store; it is applied once, by New.
type Option func(*Store)

// WithPrefix is put before every key (default "resilientmcp:auth:").
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// WithLease is how long the lock outlives a holder that stops renewing it
// (it dies, or loses Redis). Default 45 s: longer than a renewal's 30 s
// timeout, so that a holder never loses a live lease to a slow request;
// it is renewed every third of it while an authorization (which may wait
// minutes for the user) runs.
func WithLease(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.lease = d
		}
	}
}

// WithLogger receives lease takeovers and losses (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) {
		if l != nil {
			s.logger = l
		}
	}
}

// New returns the Store on rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: "resilientmcp:auth:", lease: 45 * time.Second, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return s
}

var _ auth.Store = (*Store)(nil)

// ErrLeaseLost ends a renewal's context when its lease could not be
// renewed before it would expire, or another holder has it.
var ErrLeaseLost = errors.New("redisstore: the lease on the lock was lost")

func (s *Store) keys(key auth.Key) (grant, lock, holder string) {
	id := key.ID()
	return s.prefix + "grant:" + id, s.prefix + "lock:" + id, s.prefix + "holder:" + id
}

func unavailable(err error) error {
	return fmt.Errorf("%w: redis: %w", auth.ErrStoreUnavailable, err)
}

// Load reads the grant stored under key.
func (s *Store) Load(ctx context.Context, key auth.Key) (auth.Grant, error) {
	grant, _, _ := s.keys(key)
	vals, err := s.rdb.HMGet(ctx, grant, "version", "data").Result()
	if err != nil {
		return auth.Grant{}, unavailable(err)
	}
	var g auth.Grant
	if data, ok := vals[1].(string); ok {
		if err := json.Unmarshal([]byte(data), &g); err != nil {
			return auth.Grant{}, fmt.Errorf("%w: %s is not a stored grant", auth.ErrStoreUnavailable, grant)
		}
	}
	if v, ok := vals[0].(string); ok {
		g.Version, _ = strconv.ParseInt(v, 10, 64)
	}
	return g, nil
}

var (
	// acquire takes the lock for ARGV[1] and records it as the holder;
	// it returns the previous holder's token if that one never released
	// (a takeover), "" if none, nil if the lock is held.
	acquire = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local prev = redis.call('GET', KEYS[2])
  redis.call('SET', KEYS[2], ARGV[1])
  if prev then return prev end
  return ''
end
return false`)
	renew = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)
	release = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1`)
	// cas writes ARGV[3] as version ARGV[2] if the version is ARGV[1]
	// and ARGV[4] holds the lock: 1 written, 0 another version, -1 the
	// lock is not the writer's.
	cas = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[4] then return -1 end
local v = redis.call('HGET', KEYS[1], 'version')
if (v or '0') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'data', ARGV[3])
return 1`)
)

// Update takes key's lease (waiting within ctx, trying again while Redis
// cannot be reached), runs fn under it, renewing it, and writes what fn
// returns. fn's context ends with ErrLeaseLost as its cause if the lease
// could not be renewed before it would expire.
func (s *Store) Update(ctx context.Context, key auth.Key, fn auth.UpdateFunc) (auth.Grant, error) {
	grant, lock, holder := s.keys(key)
	token := randomToken()
	acquired, err := s.lock(ctx, key, lock, holder, token)
	if err != nil {
		return auth.Grant{}, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = release.Run(rctx, s.rdb, []string{lock, holder}, token).Err() // else it expires
	}()

	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop, renewed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewed)
		s.keepLease(lctx, cancel, key, lock, token, acquired, stop)
	}()
	defer func() { close(stop); <-renewed }()

	write := func(ctx context.Context, _ auth.Key, g auth.Grant) error {
		data, err := json.Marshal(auth.Grant{Registration: g.Registration, Token: g.Token, DPoP: g.DPoP})
		if err != nil {
			return err
		}
		n, err := cas.Run(ctx, s.rdb, []string{grant, lock}, g.Version-1, g.Version, data, token).Int()
		switch {
		case err != nil:
			return unavailable(err)
		case n == -1:
			return fmt.Errorf("%w: %w", auth.ErrConflict, ErrLeaseLost)
		case n == 0:
			return auth.ErrConflict
		}
		return nil
	}
	return updateLocked(lctx, key, s, fn, write)
}

// updateLocked is auth's read, fn, compare-and-swap, with the lock held.
func updateLocked(ctx context.Context, key auth.Key, s *Store, fn auth.UpdateFunc, write func(context.Context, auth.Key, auth.Grant) error) (auth.Grant, error) {
	cur, err := s.Load(ctx, key)
	if err != nil {
		return auth.Grant{}, err
	}
	next, ferr := fn(ctx, cur)
	if next == nil {
		return cur, ferr
	}
	g := *next
	g.Version = cur.Version + 1
	if err := write(ctx, key, g); err != nil {
		return cur, errors.Join(ferr, err)
	}
	return g, ferr
}

// lock waits for key's lease within ctx and returns when it was asked
// for (the lease runs from then).
func (s *Store) lock(ctx context.Context, key auth.Key, lock, holder, token string) (time.Time, error) {
	pause := 10 * time.Millisecond
	var lastErr error
	for {
		sent := time.Now()
		prev, err := acquire.Run(ctx, s.rdb, []string{lock, holder}, token, s.lease.Milliseconds()).Text()
		switch {
		case err == nil:
			if prev != "" {
				s.logger.Warn("redisstore: took over a lock whose holder did not release it", "key", key.ID())
			}
			return sent, nil
		case errors.Is(err, redis.Nil):
			lastErr = nil
			pause = 10 * time.Millisecond
		default:
			lastErr = err
			pause = min(2*pause, 500*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return time.Time{}, unavailable(errors.Join(lastErr, ctx.Err()))
			}
			return time.Time{}, fmt.Errorf("%w: waiting for the lock: %w", auth.ErrStoreUnavailable, ctx.Err())
		case <-time.After(pause):
		}
	}
}

// keepLease renews the lease every third of it until stop; if it cannot
// vouch for the lease a third of it before it would expire, or another
// holder has it, it ends the renewal's context.
func (s *Store) keepLease(ctx context.Context, cancel context.CancelCauseFunc, key auth.Key, lock, token string, acquired time.Time, stop <-chan struct{}) {
	validUntil := acquired.Add(s.lease)
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		// An answer later than this could not save the lease in time.
		rctx, rcancel := context.WithDeadline(ctx, validUntil.Add(-s.lease/6))
		n, err := renew.Run(rctx, s.rdb, []string{lock}, token, s.lease.Milliseconds()).Int()
		rcancel()
		switch {
		case err == nil && n == 1:
			validUntil = sent.Add(s.lease)
			continue
		case err == nil:
			s.logger.Warn("redisstore: another holder has the lock", "key", key.ID())
			cancel(ErrLeaseLost)
			return
		}
		if time.Now().Add(s.lease / 3).After(validUntil) {
			s.logger.Warn("redisstore: the lease could not be renewed", "key", key.ID(), "err", err)
			cancel(ErrLeaseLost)
			return
		}
	}
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
