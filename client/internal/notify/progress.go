package notify

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/progress"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// The client's side of progress: the registry that routes
// notifications/progress to the calls that wait for them, and the
// notifications/cancelled of an abandoned request. A call's own progress
// is client/internal/progress.

// Progress is the client's progress.Registry, made by the first call
// that needs it: an idle client, or one whose calls are not followed by
// progress, pays a pointer for it.
func (m *Messages) Progress() *progress.Registry {
	if r := m.progress.Load(); r != nil {
		return r
	}
	m.progress.CompareAndSwap(nil, new(progress.Registry))
	return m.progress.Load()
}

// onProgress routes a notifications/progress to its call, if one of this
// client's calls is waiting for it; on the session's reader, so it must not
// block. It reports false if the call's OnProgress queue was full.
func (m *Messages) onProgress(n mcp.JSONRPCNotification) bool {
	return m.progress.Load().Route(n)
}

// cancelNotificationTimeout bounds a notifications/cancelled, which is best
// effort, as mcp-go's own is.
const cancelNotificationTimeout = 5 * time.Second

// TellCancelled tells the server, in the session era, that the request the
// attempt ex recorded was abandoned (a call ended for want of progress, or
// at WithMaxCallDuration): mcp-go sends no notifications/cancelled over
// HTTP, and does not say what id a request had. In 2026-07-28 closing the
// request's stream, which the call's end does, is the cancellation. Sent in
// the background: the caller has its answer already.
func (m *Messages) TellCancelled(s Session, ex *wire.Exchange, cause error) {
	id, ok := ex.RequestID()
	if !s.SessionEra() || !ok {
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
	m.host.Background(func() {
		cfg := m.host.Config()
		ctx, cancel := context.WithTimeout(cfg.Lifetime, cancelNotificationTimeout)
		defer cancel()
		if err := s.MCP().GetTransport().SendNotification(ctx, n); err != nil {
			cfg.Log.Debug("notifications/cancelled not delivered", "err", wire.Describe(err))
		}
	})
}
