package listings

import (
	"context"
	"fmt"
	"iter"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// Page lists one page of a list method from cursor on mc: its items and
// the next cursor, "" after the last.
type Page[T any] func(ctx context.Context, mc *mcpclient.Client, cursor mcp.Cursor) ([]T, mcp.Cursor, error)

// Iterate is the client's iterators (IterTools...): it pages through a
// list method from start, each page a call of its own, as the loop
// consumes them. key names an item, so that a listing started again does
// not yield it twice: a page that comes from a session that replaced a lost
// one after the first page starts the listing again from start, since a
// cursor of the old server means nothing to the new one, until
// policy.AfterListingRestart gives up.
func Iterate[T any](ctx context.Context, l *Cache, method mcp.MCPMethod, start mcp.Cursor, page Page[T], key func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yielded := map[string]struct{}{}
		for restarts := 0; ; restarts++ {
			if a := policy.AfterListingRestart(restarts, l.host.MaxAttempts()); a.End != policy.Continue {
				yield(zero, l.host.GiveUp(string(method), a.Why))
				return
			}
			again, err := iterateOnce(ctx, l.host, method, start, page, key, yielded, yield)
			if err != nil {
				yield(zero, err)
				return
			}
			if !again {
				return
			}
			l.host.Log().Info("the session was replaced during a listing; listing again from the start", "method", method)
		}
	}
}

// iterateOnce is one pass of a listing. It reports again if a page came from
// a session that replaced a lost one after the first page: the listing must
// start over. Sessions of a pool that was still filling do not count.
func iterateOnce[T any](ctx context.Context, h Host, method mcp.MCPMethod, start mcp.Cursor,
	page Page[T], key func(T) string, yielded map[string]struct{}, yield func(T, error) bool,
) (again bool, err error) {
	cursor := start
	seen := map[mcp.Cursor]struct{}{cursor: {}}
	var newest uint64 // every session up to this one was open when the first page came
	for first := true; ; first = false {
		var items []T
		var next mcp.Cursor
		var serial uint64
		err := h.Call(ctx, string(method), func(ctx context.Context) error {
			return h.Run(ctx, string(method), func(ctx context.Context, s Session) error {
				var err error
				items, next, err = page(ctx, s.MC, cursor)
				serial = s.Serial
				return err
			})
		})
		if err != nil {
			return false, err
		}
		if first {
			newest = h.Serials()
		} else if serial > newest {
			return true, nil
		}
		for _, item := range items {
			k := key(item)
			if _, dup := yielded[k]; dup {
				continue
			}
			yielded[k] = struct{}{}
			if !yield(item, nil) {
				return false, nil
			}
		}
		if next == "" {
			return false, nil
		}
		if _, dup := seen[next]; dup {
			return false, fmt.Errorf("%w: %q", mcpclient.ErrRepeatedListCursor, next)
		}
		seen[next] = struct{}{}
		cursor = next
	}
}
