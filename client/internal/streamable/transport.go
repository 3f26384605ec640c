// Package streamable is a session's transport: the wrapper around mcp-go's
// StreamableHTTP transport that each session of the HTTP path sends
// through. It records the server/discover of the handshake and the session
// id initialize's answer carried (transport.go), answers what the server
// says of protocol versions (version.go), mirrors a tool's x-mcp-header
// arguments in Mcp-Param-* headers (paramheaders.go), and keeps the
// schemas of a tools/list answer as the server sent them (schemas.go). It
// knows nothing of the client: the tools it needs for the headers it asks
// of a Tools given at construction.
package streamable

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// Transport is a session's transport. While the session is opened,
// it watches the server/discover that mcp-go's Initialize sends first:
//
//   - It keeps the answer until the client's negotiate takes it. mcp-go turns the answer
//     into an InitializeResult and drops the versions the server listed,
//     which negotiate needs to believe the stateless era; without them it
//     would have to ask the server again, a round trip per session opened.
//   - It keeps the session id the answer to initialize carried: mcp-go
//     drops it when the session expires before the handshake is over
//     (F39), and the client counts that session as opened and lost.
//   - If the connection broke under it (a pooled connection the server
//     closed), it fails the handshake with that error instead of letting
//     mcp-go take the server for a session-era one and send initialize: a
//     client remembers the era it found, so a guess would last.
//
// Every request goes out through send (version.go), which answers a
// refused protocol version. Every other method, and every interface mcp-go
// looks for, is the StreamableHTTP transport's own.
//
// A Transport is safe for concurrent use.
type Transport struct {
	*transport.StreamableHTTP
	recording atomic.Bool
	result    atomic.Pointer[json.RawMessage] // the last successful server/discover's result
	broken    atomic.Pointer[error]           // why the connection broke under server/discover
	opened    atomic.Pointer[string]          // the session id initialize's answer carried
	versions  versionState                    // what the server said of protocol versions (version.go)
	tools     Tools                           // the client's tool cache, for Mcp-Param-* headers (paramheaders.go); nil: none
}

// New returns the transport of a session about to be opened over st,
// recording its handshake until TakeDiscovered. tools is the client's tool
// cache, for the Mcp-Param-* headers; nil: none.
func New(st *transport.StreamableHTTP, tools Tools) *Transport {
	t := &Transport{StreamableHTTP: st, tools: tools}
	t.recording.Store(true)
	return t
}

func (t *Transport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if !t.recording.Load() {
		return t.send(ctx, req)
	}
	discover := req.Method == string(mcp.MethodServerDiscover)
	if broken := t.broken.Load(); broken != nil && !discover {
		return nil, *broken
	}
	resp, err := t.send(ctx, req)
	switch {
	case req.Method == string(mcp.MethodInitialize) && err == nil && resp != nil && resp.Error == nil:
		id := t.StreamableHTTP.GetSessionId()
		t.opened.Store(&id)
	case !discover:
	case err == nil && resp != nil && resp.Error == nil:
		t.result.Store(&resp.Result)
	case err != nil && wire.ConnectionBroke(err):
		t.broken.Store(&err)
	}
	return resp, err
}

// RequiresLegacyProtocol is false: mcp-go may negotiate the era on a
// transport made to listen for the session era's GET event stream, which
// the StreamableHTTP transport's own answer (true) would hold to
// initialize. The client decides the era itself (open), and mcp-go's
// listener opens no stream on a session of the stateless era, which has
// none. So a client that wants the stream opens one session on its first
// connect, not one to learn the era and another to listen.
func (t *Transport) RequiresLegacyProtocol() bool { return false }

// OpenedSession is the session id initialize's answer carried, and
// whether initialize was answered at all.
func (t *Transport) OpenedSession() (string, bool) {
	if id := t.opened.Load(); id != nil {
		return *id, true
	}
	return "", false
}

// TakeDiscovered stops recording and returns what server/discover
// answered, or nil if it was not asked or its answer could not be read.
func (t *Transport) TakeDiscovered() *mcp.DiscoverResult {
	t.recording.Store(false)
	raw := t.result.Swap(nil)
	if raw == nil {
		return nil
	}
	var res mcp.DiscoverResult
	if err := json.Unmarshal(*raw, &res); err != nil {
		return nil
	}
	return &res
}
