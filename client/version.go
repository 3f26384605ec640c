package client

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// versionState is what a session's transport learned of the protocol
// versions its server takes (F44). Its fields are atomics: it is safe for
// concurrent use.
type versionState struct {
	// declared is the version the server took after refusing the one
	// mcp-go declared; every later request declares it too. nil: mcp-go's.
	declared atomic.Pointer[string]
	// refusal is the last refusal of a version by a server of the
	// stateless era that no resend overcame. mcp-go answers a failed
	// server/discover with the session era's initialize; the client
	// answers that initialize with this refusal instead.
	refusal atomic.Pointer[mcp.JSONRPCErrorDetails]
}

// send sends a request of the session as the StreamableHTTP transport
// does, with what mcp-go does not do of the 2026-07-28 revision:
//
//   - a refusal of the version the request declared (-32022) is answered
//     here (resendAtVersion); mcp-go would take a refused server/discover
//     for a session-era server and send initialize, and fail a call;
//   - a tool's x-mcp-header arguments are mirrored in Mcp-Param-* headers
//     where mcp-go did not, and a call refused for them is answered
//     (paramheaders.go);
//   - the schemas of a tools/list answer are kept as the server sent them
//     for the listing that asked (schemas.go).
func (t *discoverRecorder) send(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodInitialize) {
		if refusal := t.versions.refusal.Load(); refusal != nil {
			return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Error: refusal}, nil
		}
	}
	if v := t.versions.declared.Load(); v != nil {
		req = declareVersion(req, *v)
	}
	call := req.Method == string(mcp.MethodToolsCall)
	if call {
		req, _ = t.withParamHeaders(req, false)
	}
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	req, resp, err = t.resendAtVersion(ctx, req, resp, err)
	if call {
		resp, err = t.resendWithParamHeaders(ctx, req, resp, err)
	}
	if err == nil && resp != nil && resp.Error == nil && req.Method == string(mcp.MethodToolsList) {
		keepSchemas(ctx, resp.Result)
	}
	return resp, err
}

// resendAtVersion answers a refusal of the protocol version req declared,
// as policy.VersionRefused decides: the request did not run, and it is sent
// again once with the newest version both sides speak, which later
// requests declare too. A refusal that stands by a server of the stateless
// era is kept, for the initialize mcp-go would send next. It returns the
// request as last sent and its answer.
func (t *discoverRecorder) resendAtVersion(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) (transport.JSONRPCRequest, *transport.JSONRPCResponse, error) {
	for resent := false; ; resent = true {
		supported, refused := versionRefusal(resp, err)
		if !refused {
			return req, resp, err
		}
		sent := declaredVersion(req.Params)
		v, ok := policy.VersionRefused(sent, supported, mcp.ValidProtocolVersions, resent)
		if !ok {
			if policy.StatelessEraRefusal(supported) {
				t.versions.refusal.Store(resp.Error)
			}
			return req, resp, err
		}
		if v != sent {
			t.versions.declared.Store(&v)
			t.StreamableHTTP.SetProtocolVersion(v)
			req = declareVersion(req, v)
		}
		resp, err = t.StreamableHTTP.SendRequest(ctx, req)
	}
}

// versionRefusal reports whether the answer is a refusal of the request's
// protocol version that names the versions the server supports.
func versionRefusal(resp *transport.JSONRPCResponse, err error) (supported []string, refused bool) {
	if err != nil || resp == nil || resp.Error == nil || resp.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		return nil, false
	}
	var e mcp.UnsupportedProtocolVersionError
	if !errors.As(resp.Error.AsError(), &e) || len(e.Supported) == 0 {
		return nil, false
	}
	return e.Supported, true
}

// declaredVersion is the protocol version a request's _meta declares, ""
// if none (the session era declares it in initialize only).
func declaredVersion(params any) string {
	meta, ok := requestMeta(params)
	if !ok {
		return ""
	}
	var v string
	_ = json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &v)
	return v
}

// declareVersion returns req declaring version in its _meta, if it
// declares one: mcp-go declares the version it negotiated. The header is
// the transport's (StreamableHTTP.SetProtocolVersion).
func declareVersion(req transport.JSONRPCRequest, version string) transport.JSONRPCRequest {
	raw, err := json.Marshal(req.Params)
	if err != nil {
		return req
	}
	v, _ := json.Marshal(version)
	out := wire.EditParams(raw, func(e *wire.Edit) {
		if _, ok := e.Meta(mcp.MetaKeyProtocolVersion); ok {
			e.SetMeta(mcp.MetaKeyProtocolVersion, v)
		}
	})
	if out != nil {
		req.Params = json.RawMessage(out)
	}
	return req
}

func requestMeta(params any) (map[string]json.RawMessage, bool) {
	fields, ok := wire.ObjectFields(params)
	if !ok || fields["_meta"] == nil {
		return nil, false
	}
	return wire.ObjectFields(fields["_meta"])
}
