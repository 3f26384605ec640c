// Package hotpath writes and reads the client's plain tools/calls itself,
// with client/internal/toolcall's encoder and decoder. It knows the client
// only through what it is given: the session's transport (Transport) and
// HTTP client when the session opens, the rest of the session and what the
// client adds to its requests with each call (Session). It does not import
// the client.
//
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
package hotpath

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

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/toolcall"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// Transport is what the hot path reads of a session's transport (the
// client's wrapper of mcp-go's StreamableHTTP). Its methods are safe for
// concurrent use.
type Transport interface {
	// GetSessionId is the session's id as the transport holds it now: ""
	// once it saw the session end (mcp-go's transport then refuses to
	// send), or if the server gave none.
	GetSessionId() string
	// DeclaresVersion reports whether the transport declares a protocol
	// version of its own in place of mcp-go's (the server refused
	// mcp-go's): mcp-go writes those calls.
	DeclaresVersion() bool
	// WithParamHeaders returns req, a tools/call of the stateless era,
	// with the Mcp-Param-* headers the cached definition of its tool
	// calls for, and whether they differ from those req had; unless
	// replace is set, a request that has such headers is left as it is.
	WithParamHeaders(req transport.JSONRPCRequest, replace bool) (transport.JSONRPCRequest, bool)
}

// Session is the session a call goes out on, and what the client adds to
// every request, as the client gives them with each call. Nothing of it is
// kept but what the Writer makes of it once (its url, headers and _meta).
type Session struct {
	MCP        *mcpclient.Client      // the session's mcp-go client: its capabilities, and the transport that reads what the Writer does not
	SessionEra bool                   // negotiated a revision up to 2025-11-25: Mcp-Session-Id, no _meta
	Version    string                 // the negotiated protocol version
	Init       *mcp.InitializeRequest // the request the session was opened with: its client info
	Done       context.Context        // ends when the session closes; its requests end with it

	Endpoint   string                   // the client's endpoint
	Headers    map[string]string        // WithHeaders'
	HeaderFunc transport.HTTPHeaderFunc // WithHeaderFunc's; nil: none

	ParserFallbacks *atomic.Uint64 // Stats.ParserFallbacks: results left to mcp-go's parser
}

// Writer is what a session writes into each tools/call it takes over.
// Its headers and _meta are made by the session's first tools/call, not
// when the session opens: an idle client that never calls a tool does not
// keep them (BenchmarkIdleClients).
//
// A Writer is safe for concurrent use; its methods are safe on a nil
// Writer, which takes no call over (mcp-go writes them).
type Writer struct {
	tr Transport    // the session's transport: its session id, version refusals, Mcp-Param-* headers
	hc *http.Client // the HTTP client it sends with

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

// NewWriter returns the Writer of a session whose transport is tr and
// whose requests go out on hc.
func NewWriter(tr Transport, hc *http.Client) *Writer {
	return &Writer{tr: tr, hc: hc}
}

// LevelSet notes that the session's mcp-go client was given a logging
// level.
func (hp *Writer) LevelSet(level mcp.LoggingLevel) {
	if hp != nil && level != "" {
		hp.levelSet.Store(true)
	}
}

// requestSeq numbers the tools/calls the client writes itself. Their
// ids are integers, as mcp-go's are, counted from 2^40 so that they never
// equal the ids mcp-go's own counter gives on the same session (from 1):
// an id names the request a notifications/cancelled is about.
var requestSeq atomic.Int64

func init() { requestSeq.Store(1 << 40) }

// prepare makes hp's url, headers and _meta for s, once: false if it
// cannot, and mcp-go writes the calls.
func (hp *Writer) prepare(s *Session) bool {
	hp.once.Do(func() {
		u, err := url.Parse(s.Endpoint)
		if err != nil {
			return
		}
		header := make(http.Header, 4+len(s.Headers))
		header.Set("Content-Type", "application/json")
		header.Set("Accept", "application/json, text/event-stream")
		if id := hp.tr.GetSessionId(); s.SessionEra && id != "" {
			header.Set(transport.HeaderKeySessionID, id)
		}
		if s.Version != "" {
			header.Set(transport.HeaderKeyProtocolVersion, s.Version)
		}
		for k, v := range s.Headers {
			header.Set(k, v)
		}
		if !s.SessionEra {
			meta := map[string]any{
				mcp.MetaKeyProtocolVersion:    s.Version,
				mcp.MetaKeyClientCapabilities: s.MCP.GetClientCapabilities(),
			}
			if info := s.Init.Params.ClientInfo; info.Name != "" {
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

// Call makes one attempt of a tools/call on s as the hot path writes it;
// false: not a call it takes over (nothing was sent), or an answer asking
// for input (SEP-2322), which mcp-go's CallTool then carries through its
// rounds, sending the call again as it does between rounds. Its errors
// are mcp-go's CallTool's.
//
// The request goes out on the session's HTTP client, through the same
// tracker and guard as mcp-go's requests, with the headers mcp-go's
// transport writes. A 200 answer in JSON is read here in one pass; any
// other outcome (an event stream, another status, an error, a JSON-RPC
// error, a result the reader leaves to mcp-go) is handed to mcp-go's
// transport as the answer to the same request (wire.Exchange.Preanswer),
// which reads it as it reads every answer: the request went out once.
func (hp *Writer) Call(ctx context.Context, s *Session, req *mcp.CallToolRequest) (*mcp.CallToolResult, bool, error) {
	p := &req.Params
	if hp == nil || !hp.prepare(s) || req.Header != nil || p.Meta != nil || p.Task != nil || p.InputResponses != nil || p.RequestState != "" ||
		hp.meta != nil && hp.levelSet.Load() || hp.tr.DeclaresVersion() {
		return nil, false, nil
	}
	ex := wire.ExchangeOf(ctx)
	// A call followed by its progress has its token written into its
	// requests (RewriteRequests): mcp-go writes those.
	if ex == nil || ex.Rewrites() || s.SessionEra && (hp.tr.GetSessionId() == "" || len(hp.header[sessionHeader]) == 0) {
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
	id := requestSeq.Add(1)
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
		rpc, _ := hp.tr.WithParamHeaders(transport.JSONRPCRequest{Method: string(mcp.MethodToolsCall), Params: json.RawMessage(params.Bytes()), Header: own}, false)
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
	stop := context.AfterFunc(s.Done, cancel)
	defer stop()
	if f := s.HeaderFunc; f != nil {
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
	ex.Expect(id) // the guard checks the answer against it, without reading the body
	resp, err := hp.hc.Do(httpReq)
	if err == nil && resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "application/json" {
		var res *mcp.CallToolResult
		if res, resp = read(resp); res != nil {
			return res, true, nil
		}
		s.ParserFallbacks.Add(1)
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
	return callToolMCPGo(ctx, s, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Method:  string(mcp.MethodToolsCall),
		Params:  json.RawMessage(params.Bytes()),
		Header:  own,
	})
}

// maxAnswer bounds the answers the hot path reads itself: a larger one
// (WithMaxResponseBytes allows 16 MiB) is left to mcp-go, which reads it
// as it always has, without a copy of the client's beside its own.
const maxAnswer = 1 << 20

// read reads a 200 answer in JSON: its result, its body closed; or nil
// and a response whose body gives mcp-go the same bytes, and the same
// read error, as the answer gave the client.
func read(resp *http.Response) (*mcp.CallToolResult, *http.Response) {
	if resp.ContentLength > maxAnswer {
		return nil, resp
	}
	buf := toolcall.NewBuffer()
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, maxAnswer+1))
	if err == nil && n <= maxAnswer {
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
	if n > maxAnswer {
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
func callToolMCPGo(ctx context.Context, s *Session, rpc transport.JSONRPCRequest) (*mcp.CallToolResult, bool, error) {
	resp, err := s.MCP.GetTransport().SendRequest(ctx, rpc)
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

// sessionHeader is Mcp-Session-Id as net/http keys it.
var sessionHeader = http.CanonicalHeaderKey(transport.HeaderKeySessionID)

// errNoAnswer is the error of a request the transport answered with
// nothing (mcp-go's CallTool would not return at all).
var errNoAnswer = errors.New("resilientmcp: tools/call: the transport returned no answer")
