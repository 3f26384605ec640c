// Package listings is the room of the client's memory of the server's
// answers: the cache of listings and reads (SEP-2549's ttlMs and
// cacheScope, stale-if-error, the listing store), and the tools the replay
// decision reads (their annotations, listed by the client itself when a
// decision needs them, and dropped when the server's identity changes).
// One lock and one invalidation for both: they are the same listings.
//
// It knows nothing of the client: what it needs of it (the call path,
// which decides retries; a session to send a listing on; the logger, the
// observers, the options, the accounting of background work for Close)
// it asks of a Host, given at construction (Cache.Init).
package listings

import (
	"context"
	"log/slog"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/store"
)

// Host is what the cache needs of its client. Its methods must not block
// on the cache's lock: the cache calls them with nothing locked, except
// where a method says otherwise.
type Host interface {
	// Call runs body as one call of the client's, with its books (the
	// observers, Stats, the retry budget); a nil body is a call the cache
	// answered. A call after Close fails with the client's ErrClosed.
	Call(ctx context.Context, method string, body func(context.Context) error) error
	// Run sends a request through the client's pipeline, without a
	// call's books: whether a failure is retried, replayed or given up is
	// the client's decision (policy), never the cache's. send makes one
	// attempt on a session.
	Run(ctx context.Context, method string, send func(context.Context, Session) error) error
	// ListTools is mc.ListTools (page: mc.ListToolsByPage) with every
	// tool's schemas as the server sent them.
	ListTools(ctx context.Context, mc *mcpclient.Client, req mcp.ListToolsRequest, page bool) (*mcp.ListToolsResult, error)
	// Fresh reports whether the call's options ask for the server's
	// answer (client.Fresh), or are invalid (the call fails with them).
	Fresh(ctx context.Context) bool
	// StaleFailure is what err, a listing's failure, means for
	// stale-if-error.
	StaleFailure(ctx context.Context, err error) policy.StaleFailure
	// ServedStale records that the call ctx (Call's) is answered stale.
	ServedStale(ctx context.Context)
	// Principal is the fingerprint of the credential the client last
	// sent, "" for none.
	Principal() string
	// Relisten restarts the listening of the stateless era's sessions,
	// whose filter now includes the list changes (Cache.Listening).
	Relisten()
	// ToolsChanged tells the notification handlers that the tools changed
	// (notifications/tools/list_changed), as the server would have.
	ToolsChanged()
	// RetryToolCall is WithRetryToolCall's decision for a tool.
	RetryToolCall(t mcp.Tool) bool
	// StartBackground counts a goroutine of the client's own, which Close
	// waits for, and fails (with ErrClosed) once the client is closed;
	// EndBackground ends one it counted.
	StartBackground() error
	EndBackground()
	// Lifetime is the client's lifetime (ends at Close) and the bound of
	// a listing the client makes for itself (WithCallTimeout).
	Lifetime() (context.Context, time.Duration)
	// Off: WithListingCache(false).
	Off() bool
	// MaxStale is how old a listing (a read, if read) may be served stale.
	MaxStale(read bool) time.Duration
	// Store is WithListingStore's store, nil without one.
	Store() store.ListingStore
	// Endpoint names the server in the store's keys.
	Endpoint() string
	// Log is the client's logger.
	Log() *slog.Logger

	// For Iterate. Serials counts the sessions put into service in place
	// of lost ones so far (Session.Serial); MaxAttempts is
	// WithMaxAttempts'; GiveUp is the client's ErrUnavailable for a
	// listing restarted too often.
	Serials() uint64
	MaxAttempts() int
	GiveUp(method, why string) error
}

// Session is what the cache reads of one of the client's sessions.
type Session struct {
	MC      *mcpclient.Client
	Version string              // the protocol version negotiated
	Info    *mcp.Implementation // the server's, as it gave it; nil if not known
	Serial  uint64              // Host.Serials when it went into service
}

// Identity is the server's identity as its session gave it: its name and
// version, "" if not known.
func (s Session) Identity() string {
	if s.Info == nil {
		return ""
	}
	return s.Info.Name + " " + s.Info.Version
}
