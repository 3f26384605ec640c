package client

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/progress"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// ProgressTimeoutError is in the chain of a call that ended because no
// progress came for it for Idle (ProgressTimeout, WithProgressTimeout). It
// matches context.DeadlineExceeded with errors.Is: the call ran out of time,
// as a deadline would have ended it. Like every error the client returns, it
// is immutable and safe to share between goroutines.
type ProgressTimeoutError = progress.TimeoutError

// progressCall is a call followed by its progress (client/internal/progress).
type progressCall = progress.Call

// governs reports how a call with options o is followed by its progress:
// the idle timeout that governs it (0: none) and the OnProgress to tell;
// ok is false when it is neither governed nor followed.
func (c *ResilientClient) governs(o *callOptions) (idle time.Duration, onProgress func(mcp.ProgressNotification), ok bool) {
	idle = c.opts.progressTimeout
	if o != nil {
		if o.ofTask {
			// The task call governs its requests as a whole.
			return 0, nil, false
		}
		if o.progressTimeout > 0 {
			idle = o.progressTimeout
		}
		onProgress = o.onProgress
	}
	return idle, onProgress, idle > 0 || onProgress != nil
}

// progressCalls is the client's progressRegistry, made by the first call
// that needs it: an idle client, or one whose calls are not followed by
// progress, pays a pointer for it.
func (c *ResilientClient) progressCalls() *progress.Registry {
	if r := c.progress.Load(); r != nil {
		return r
	}
	c.progress.CompareAndSwap(nil, new(progress.Registry))
	return c.progress.Load()
}

// onProgress routes a notifications/progress to its call, if one of this
// client's calls is waiting for it; on the session's reader, so it must not
// block. It reports false if the call's OnProgress queue was full.
func (c *ResilientClient) onProgress(n mcp.JSONRPCNotification) bool {
	return c.progress.Load().Route(n)
}

// cancelNotificationTimeout bounds a notifications/cancelled, which is best
// effort, as mcp-go's own is.
const cancelNotificationTimeout = 5 * time.Second

// tellCancelled tells the server, in the session era, that the request the
// attempt ex recorded was abandoned (a call ended for want of progress, or
// at WithMaxCallDuration): mcp-go sends no notifications/cancelled over
// HTTP, and does not say what id a request had. In 2026-07-28 closing the
// request's stream, which the call's end does, is the cancellation. Sent in
// the background: the caller has its answer already.
func (c *ResilientClient) tellCancelled(s *session, ex *wire.Exchange, cause error) {
	id, ok := ex.RequestID()
	if !s.sessionEra || !ok {
		return
	}
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
		},
	}
	c.goBackground(func() {
		ctx, cancel := context.WithTimeout(c.lifetime, cancelNotificationTimeout)
		defer cancel()
		if err := s.mc.GetTransport().SendNotification(ctx, n); err != nil {
			c.log.Debug("notifications/cancelled not delivered", "err", describe(err))
		}
	})
}
