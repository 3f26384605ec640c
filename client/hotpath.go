package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/toolcall"
)

// A plain tools/call over Streamable HTTP is the client's hot path, and
// the client writes it itself (issue 46): mcp-go marshals its params
// through a generic envelope (and, in the stateless era, marshals,
// decodes and marshals them again to add the per-request _meta), and
// reads the answer's result four times over (a probe, the result, each
// content item for its type and then its body). Here the params are
// written once into a pooled buffer, with the session's _meta written
// once per session, and sent on the session's own mcp-go transport, as
// the task requests are (rawRequest): the same connection, headers,
// session id, authorization, answer guard and event-stream handling. The
// result is read in one pass (client/internal/toolcall); what that reader
// does not recognise goes to mcp-go's parser, as before, and is counted
// in Stats.ParserFallbacks.
//
// The client takes the call over only where it can write exactly what
// mcp-go would: a session of its own over HTTP whose mcp-go client has no
// options of the caller's (WithClientOptions can add handlers, tracers,
// propagators of _meta), and a request without _meta, task, input
// responses or headers of its own; in the stateless era, no logging level
// set. Every other call goes through mcp-go's CallTool, unchanged.

// hotPath is what a session writes into each tools/call it takes over.
type hotPath struct {
	// meta is the stateless era's _meta, as mcp-go writes it for the
	// session (protocol version, client capabilities, client info, keys
	// sorted); nil in the session era, which has none.
	meta []byte
	// levelSet: a logging level was set on the session's mcp-go client,
	// which it then adds to every request's _meta in the stateless era:
	// mcp-go writes those calls.
	levelSet atomic.Bool
}

// levelSet notes that s's mcp-go client was given a logging level.
func (s *session) levelSet(level mcp.LoggingLevel) {
	if s.hot != nil && level != "" {
		s.hot.levelSet.Store(true)
	}
}

// hotRequestSeq numbers the tools/calls the client writes itself. Their
// ids are integers, as mcp-go's are, counted from 2^40 so that they never
// equal the ids mcp-go's own counter gives on the same session (from 1):
// an id names the request a notifications/cancelled is about.
var hotRequestSeq atomic.Int64

func init() { hotRequestSeq.Store(1 << 40) }

// hotPathFor returns what s writes into the calls it takes over, or nil
// if mcp-go writes them.
func (c *ResilientClient) hotPathFor(s *session) *hotPath {
	if len(c.opts.clientOptions) > 0 || c.elicitationDefaults {
		return nil
	}
	if s.sessionEra {
		return &hotPath{}
	}
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion:    s.version,
		mcp.MetaKeyClientCapabilities: s.mc.GetClientCapabilities(),
	}
	if info := s.request.Params.ClientInfo; info.Name != "" {
		meta[mcp.MetaKeyClientInfo] = info
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil
	}
	return &hotPath{meta: raw}
}

// errNoAnswer is the error of a request the transport answered with
// nothing (mcp-go's CallTool would not return at all).
var errNoAnswer = errors.New("resilientmcp: tools/call: the transport returned no answer")

// callToolHot makes one attempt of a tools/call on s as the hot path
// writes it; false: not a call it takes over (nothing was sent), or an
// answer asking for input (SEP-2322), which mcp-go's CallTool then
// carries through its rounds. Its errors are mcp-go's CallTool's.
func (c *ResilientClient) callToolHot(ctx context.Context, s *session, req *mcp.CallToolRequest) (*mcp.CallToolResult, bool, error) {
	hp := s.hot
	p := &req.Params
	if hp == nil || req.Header != nil || p.Meta != nil || p.Task != nil || p.InputResponses != nil || p.RequestState != "" ||
		hp.meta != nil && hp.levelSet.Load() {
		return nil, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, true, transport.NewError(err) // as mcp-go sends nothing
	}
	buf := toolcall.NewBuffer()
	defer buf.Free()
	if err := buf.WriteParams(p.Name, p.Arguments, hp.meta); err != nil {
		return nil, false, nil // mcp-go says why it cannot marshal them
	}
	var header http.Header
	if hp.meta != nil {
		header = make(http.Header, 2)
		header.Set(mcp.HeaderMethod, string(mcp.MethodToolsCall))
		if name, ok := mcp.EncodeHeaderValue(p.Name); ok {
			header.Set(mcp.HeaderName, name)
		}
	}
	resp, err := s.mc.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(hotRequestSeq.Add(1)),
		Method:  string(mcp.MethodToolsCall),
		Params:  json.RawMessage(buf.Bytes()),
		Header:  header,
	})
	switch {
	case err != nil:
		return nil, true, transport.NewError(err)
	case resp == nil:
		return nil, true, errNoAnswer
	case resp.Error != nil:
		return nil, true, resp.Error.AsError()
	}
	if res, ok := toolcall.DecodeResult(resp.Result); ok {
		return res, true, nil
	}
	c.stats.parserFallbacks.Add(1)
	res, err := mcp.ParseCallToolResult(&resp.Result)
	if err != nil {
		return nil, true, err
	}
	if res.NeedsInput() {
		return nil, false, nil
	}
	return res, true, nil
}
