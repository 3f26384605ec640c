package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/toolcall"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// A plain tools/call over Streamable HTTP is the client's hot path, and
// the client writes it itself (issue 46). mcp-go marshals its params
// through a generic envelope (and, in the stateless era, marshals,
// decodes and marshals them again to add the per-request _meta), watches
// each request with a goroutine of its own, and reads the answer five
// times over (the JSON-RPC envelope, a probe of the result, the result,
// each content item for its type and then its body). Here the params are
// written once into a pooled buffer, with the session's _meta and headers
// made once per session, and the request goes out on the session's own
// HTTP client, the one its mcp-go transport sends with: the same
// connections, tracker, answer guard, connection check and authorization.
// A JSON answer is read in one pass (client/internal/toolcall). Anything
// else (an event stream, another status, an error, a result the reader
// does not recognise) is handed to the session's mcp-go transport as the
// answer to the same request (wire.Exchange.Preanswer), which reads it as
// it always has; a result left to mcp-go's parser is counted in
// Stats.ParserFallbacks.
//
// The client takes a call over only where it writes exactly what mcp-go
// would (TestHotPathWritesWhatMCPGoWrites): a session of its own over
// HTTP whose mcp-go client has no options of the caller's
// (WithClientOptions can add handlers, tracers, propagators of _meta), no
// version declared in place of mcp-go's, and a session id unless in the
// stateless era; a request without _meta (a progress token among them),
// task, input responses or headers of its own; in the stateless era, no
// logging level set. Every
// other call goes through mcp-go's CallTool, unchanged.

// hotPath is what a session writes into each tools/call it takes over.
// Its headers and _meta are made by the session's first tools/call, not
// when the session opens: an idle client that never calls a tool does not
// keep them (BenchmarkIdleClients).
type hotPath struct {
	tr *discoverRecorder // the session's transport: its session id, version refusals, Mcp-Param-* headers
	hc *http.Client      // the HTTP client it sends with

	once sync.Once // makes the fields below, once (prepare)
	// url is the endpoint, as it writes it; "" if it cannot: mcp-go
	// writes the calls.
	url string
	// header is what its transport adds to every request of the session
	// (content types, session id, protocol version, WithHeaders'), in
	// one map cloned for each call.
	header http.Header
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
func (c *ResilientClient) hotPathFor(tr *discoverRecorder, hc *http.Client) *hotPath {
	if len(c.opts.clientOptions) > 0 || c.elicitationDefaults {
		return nil
	}
	return &hotPath{tr: tr, hc: hc}
}

// prepare makes hp's url, headers and _meta for s, once: false if it
// cannot, and mcp-go writes the calls.
func (hp *hotPath) prepare(endpoint string, headers map[string]string, s *session) bool {
	hp.once.Do(func() {
		u, err := url.Parse(endpoint)
		if err != nil {
			return
		}
		header := make(http.Header, 4+len(headers))
		header.Set("Content-Type", "application/json")
		header.Set("Accept", "application/json, text/event-stream")
		if id := hp.tr.GetSessionId(); s.sessionEra && id != "" {
			header.Set(transport.HeaderKeySessionID, id)
		}
		if s.version != "" {
			header.Set(transport.HeaderKeyProtocolVersion, s.version)
		}
		for k, v := range headers {
			header.Set(k, v)
		}
		if !s.sessionEra {
			meta := map[string]any{
				mcp.MetaKeyProtocolVersion:    s.version,
				mcp.MetaKeyClientCapabilities: s.mc.GetClientCapabilities(),
			}
			if info := s.request.Params.ClientInfo; info.Name != "" {
				meta[mcp.MetaKeyClientInfo] = info
			}
			if hp.meta, err = json.Marshal(meta); err != nil {
				return
			}
		}
		hp.header, hp.url = header, u.String()
	})
	return hp.url != ""
}

// callToolHot makes one attempt of a tools/call on s as the hot path
// writes it; false: not a call it takes over (nothing was sent), or an
// answer asking for input (SEP-2322), which mcp-go's CallTool then carries
// through its rounds, sending the call again as it does between rounds.
// Its errors are mcp-go's CallTool's.
//
// The request goes out on the session's HTTP client, through the same
// tracker and guard as mcp-go's requests, with the headers mcp-go's
// transport writes. A 200 answer in JSON is read here in one pass; any
// other outcome (an event stream, another status, an error, a JSON-RPC
// error, a result the reader leaves to mcp-go) is handed to mcp-go's
// transport as the answer to the same request (wire.Exchange.Preanswer),
// which reads it as it reads every answer: the request went out once.
func (c *ResilientClient) callToolHot(ctx context.Context, s *session, req *mcp.CallToolRequest) (*mcp.CallToolResult, bool, error) {
	hp := s.hot
	p := &req.Params
	if hp == nil || !hp.prepare(c.endpoint, c.opts.headers, s) || req.Header != nil || p.Meta != nil || p.Task != nil || p.InputResponses != nil || p.RequestState != "" ||
		hp.meta != nil && hp.levelSet.Load() || hp.tr.versions.declared.Load() != nil {
		return nil, false, nil
	}
	ex := wire.ExchangeOf(ctx)
	// A call followed by its progress has its token written into its
	// requests (RewriteRequests): mcp-go writes those.
	if ex == nil || ex.Rewrites() || s.sessionEra && (hp.tr.GetSessionId() == "" || len(hp.header[sessionHeader]) == 0) {
		// No session id: mcp-go's transport saw its session end, and
		// refuses to send (or the server gave none, and mcp-go writes
		// those calls).
		return nil, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, true, transport.NewError(err) // as mcp-go sends nothing
	}
	params := toolcall.NewBuffer()
	defer params.Free()
	if err := params.WriteParams(p.Name, p.Arguments, hp.meta); err != nil {
		return nil, false, nil // mcp-go says why it cannot marshal them
	}
	id := hotRequestSeq.Add(1)
	// What mcp-go's transport writes (StreamableHTTP.sendHTTP): the
	// request's own headers (the stateless era's Mcp-Method, Mcp-Name and
	// Mcp-Param-*), then the session's (hp.header), which win.
	var own http.Header
	if hp.meta != nil {
		own = make(http.Header, 3)
		own.Set(mcp.HeaderMethod, string(mcp.MethodToolsCall))
		if name, ok := mcp.EncodeHeaderValue(p.Name); ok {
			own.Set(mcp.HeaderName, name)
		}
		rpc, _ := hp.tr.withParamHeaders(transport.JSONRPCRequest{Method: string(mcp.MethodToolsCall), Params: json.RawMessage(params.Bytes()), Header: own}, false)
		own = rpc.Header
	}
	header := hp.header.Clone()
	for k, v := range own {
		if _, ok := hp.header[k]; !ok {
			header[k] = v
		}
	}
	// mcp-go's transport ends its requests when it is closed; the session
	// is cancelled first when it closes.
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	if f := c.opts.headerFunc; f != nil {
		for k, v := range f(reqCtx) {
			header.Set(k, v)
		}
	}
	body := toolcall.AppendRequest(make([]byte, 0, 64+params.Len()), id, params.Bytes())
	httpReq, err := http.NewRequestWithContext(reqCtx, http.MethodPost, hp.url, bytes.NewReader(body))
	if err != nil {
		return nil, false, nil
	}
	httpReq.Header = header
	resp, err := hp.hc.Do(httpReq)
	if err == nil && resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "application/json" {
		var res *mcp.CallToolResult
		if res, resp = c.readHot(resp); res != nil {
			return res, true, nil
		}
		c.stats.ParserFallbacks.Add(1)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the client's wrapping, which mcp-go's http.Client adds again
	}
	ex.Preanswer(resp, err)
	defer ex.ClearPreanswer()
	// mcp-go's transport reads the answer as it reads every answer: the
	// request its http.Client is given is answered without being sent
	// (the one sent had the same bytes).
	return c.callToolMCPGo(ctx, s, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Method:  string(mcp.MethodToolsCall),
		Params:  json.RawMessage(params.Bytes()),
		Header:  own,
	})
}

// maxHotAnswer bounds the answers the hot path reads itself: a larger one
// (WithMaxResponseBytes allows 16 MiB) is left to mcp-go, which reads it
// as it always has, without a copy of the client's beside its own.
const maxHotAnswer = 1 << 20

// readHot reads a 200 answer in JSON: its result, its body closed; or nil
// and a response whose body gives mcp-go the same bytes, and the same
// read error, as the answer gave the client.
func (c *ResilientClient) readHot(resp *http.Response) (*mcp.CallToolResult, *http.Response) {
	if resp.ContentLength > maxHotAnswer {
		return nil, resp
	}
	buf := toolcall.NewBuffer()
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, maxHotAnswer+1))
	if err == nil && n <= maxHotAnswer {
		resp.Body.Close()
		res, ok := toolcall.DecodeResponse(buf.Bytes())
		if ok {
			buf.Free()
			return res, resp
		}
		err = io.EOF
	}
	// The buffer goes to mcp-go, not back to the pool.
	var rest io.Reader = errReader{err}
	if n > maxHotAnswer {
		rest = resp.Body // the rest of the answer, still to be read
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf.Bytes()), rest), resp.Body}
	return nil, resp
}

// errReader fails every read with its error: the read error of a body,
// for mcp-go to meet where it met it.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// callToolMCPGo sends rpc on s's transport (answered already: Preanswer)
// and reads the answer as mcp-go's CallTool does; false: an answer asking
// for input, for mcp-go's CallTool.
func (c *ResilientClient) callToolMCPGo(ctx context.Context, s *session, rpc transport.JSONRPCRequest) (*mcp.CallToolResult, bool, error) {
	resp, err := s.mc.GetTransport().SendRequest(ctx, rpc)
	switch {
	case err != nil:
		return nil, true, transport.NewError(err)
	case resp == nil:
		return nil, true, errNoAnswer
	case resp.Error != nil:
		return nil, true, resp.Error.AsError()
	}
	res, err := mcp.ParseCallToolResult(&resp.Result)
	if err != nil {
		return nil, true, err
	}
	if res.NeedsInput() {
		return nil, false, nil
	}
	return res, true, nil
}

// errNoAnswer is the error of a request the transport answered with
// nothing (mcp-go's CallTool would not return at all).
// sessionHeader is Mcp-Session-Id as net/http keys it.
var sessionHeader = http.CanonicalHeaderKey(transport.HeaderKeySessionID)

var errNoAnswer = errors.New("resilientmcp: tools/call: the transport returned no answer")
