package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync/atomic"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// mcp-go's client sends params.task but cannot read the answer (a
// CreateTaskResult has no content), and its tasks/get drops what
// 2026-07-28 inlines (the result, the error): so the client writes these
// requests itself, on the session's mcp-go transport, with what mcp-go
// would have added (in 2026-07-28 the per-request _meta and the Mcp-Method
// and Mcp-Name headers).

// RPCError is a JSON-RPC error the server answered a request the client
// wrote itself with: mcp-go's error for it (as mcp-go's own methods return
// it), and the code, which the task decisions read.
type RPCError struct {
	code int
	err  error
}

func (e *RPCError) Error() string { return e.err.Error() }
func (e *RPCError) Unwrap() error { return e.err }

// tasksExtension is SEP-2663's extension id, declared in a 2026-07-28
// request's client capabilities.
const tasksExtension = "io.modelcontextprotocol/tasks"

// requestSeq numbers the requests the client writes itself. Their ids are
// strings, which never equal mcp-go's integer ids on the same session.
var requestSeq atomic.Uint64

// Session is what Request needs of the session it is sent on.
type Session struct {
	MC         *mcpclient.Client
	SessionEra bool   // negotiated a revision up to 2025-11-25
	Version    string // the protocol version negotiated
	ClientInfo mcp.Implementation
}

// Request sends method with params on s's transport and returns the
// result as it came. name is the request's Mcp-Name in 2026-07-28 (the
// tool's name on tools/call, the task id on tasks/*).
func Request(ctx context.Context, s Session, method mcp.MCPMethod, params map[string]json.RawMessage, name string) (json.RawMessage, error) {
	var header http.Header
	var body any = params
	if !s.SessionEra {
		caps := s.MC.GetClientCapabilities()
		caps.Extensions = maps.Clone(caps.Extensions)
		if caps.Extensions == nil {
			caps.Extensions = map[string]any{}
		}
		caps.Extensions[tasksExtension] = map[string]any{}
		version, err := json.Marshal(s.Version)
		if err != nil {
			return nil, err
		}
		capsRaw, err := json.Marshal(caps)
		if err != nil {
			return nil, err
		}
		var info json.RawMessage
		if ci := s.ClientInfo; ci.Name != "" {
			if info, err = json.Marshal(ci); err != nil {
				return nil, err
			}
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		edited := wire.EditParams(raw, func(e *wire.Edit) {
			e.SetMeta(mcp.MetaKeyProtocolVersion, version)
			e.SetMeta(mcp.MetaKeyClientCapabilities, capsRaw)
			if info != nil {
				e.SetMeta(mcp.MetaKeyClientInfo, info)
			}
		})
		if edited == nil {
			return nil, fmt.Errorf("resilientmcp: %s: the request's _meta is not a JSON object", method)
		}
		body = json.RawMessage(edited)
		header = http.Header{}
		header.Set(mcp.HeaderMethod, string(method))
		if v, ok := mcp.EncodeHeaderValue(name); ok {
			header.Set(mcp.HeaderName, v)
		}
	}
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId("resilientmcp-" + strconv.FormatUint(requestSeq.Add(1), 10)),
		Method:  string(method),
		Params:  body,
		Header:  header,
	}
	resp, err := s.MC.GetTransport().SendRequest(ctx, req)
	if err != nil {
		return nil, transport.NewError(err) // as mcp-go's client wraps it
	}
	if resp.Error != nil {
		return nil, &RPCError{code: resp.Error.Code, err: resp.Error.AsError()}
	}
	return resp.Result, nil
}

// taskWire is a task as tasks/get answers it, and as a CreateTaskResult
// carries it: under "task" in 2025-11-25, inline in 2026-07-28, where a
// finished task also carries its result or error.
type taskWire struct {
	TaskID         string                   `json:"taskId"`
	Status         mcp.TaskStatus           `json:"status"`
	StatusMessage  string                   `json:"statusMessage,omitempty"`
	PollInterval   *int64                   `json:"pollInterval,omitempty"`   // 2025-11-25
	PollIntervalMs *int64                   `json:"pollIntervalMs,omitempty"` // 2026-07-28
	Result         json.RawMessage          `json:"result,omitempty"`         // 2026-07-28, completed
	Error          *mcp.JSONRPCErrorDetails `json:"error,omitempty"`          // 2026-07-28, failed
}

func (t *taskWire) interval() *int64 {
	if t.PollIntervalMs != nil {
		return t.PollIntervalMs
	}
	return t.PollInterval
}
