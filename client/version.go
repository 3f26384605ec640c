package client

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
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

// send sends a request of the session, as the StreamableHTTP transport
// does, but for the protocol version: a server of the stateless era that
// refuses the version the request declared (-32022) did not run it, and it
// is sent again once with the newest version both sides speak, which later
// requests declare too (policy.VersionRefused). mcp-go would instead take
// the refused server/discover for a session-era server and send
// initialize, and fail a call with the refusal.
//
// It also keeps the schemas of a tools/list answer as the server sent them
// for the listing that asked (schemas.go).
func (t *discoverRecorder) send(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodInitialize) {
		if refusal := t.versions.refusal.Load(); refusal != nil {
			return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Error: refusal}, nil
		}
	}
	if v := t.versions.declared.Load(); v != nil {
		req = declareVersion(req, *v)
	}
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	for resent := false; ; resent = true {
		supported, refused := versionRefusal(resp, err)
		if !refused {
			break
		}
		v, ok := policy.VersionRefused(declaredVersion(req.Params), supported, mcp.ValidProtocolVersions, resent)
		if !ok {
			if policy.StatelessEraRefusal(supported) {
				t.versions.refusal.Store(resp.Error)
			}
			break
		}
		if v != declaredVersion(req.Params) {
			t.versions.declared.Store(&v)
			t.StreamableHTTP.SetProtocolVersion(v)
			req = declareVersion(req, v)
		}
		resp, err = t.StreamableHTTP.SendRequest(ctx, req)
	}
	if err == nil && resp != nil && resp.Error == nil && req.Method == string(mcp.MethodToolsList) {
		keepSchemas(ctx, resp.Result)
	}
	return resp, err
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
	fields, ok := objectFields(req.Params)
	if !ok {
		return req
	}
	meta, ok := objectFields(fields["_meta"])
	if !ok || meta[mcp.MetaKeyProtocolVersion] == nil {
		return req
	}
	v, _ := json.Marshal(version)
	meta[mcp.MetaKeyProtocolVersion] = v
	raw, err := json.Marshal(meta)
	if err != nil {
		return req
	}
	fields["_meta"] = raw
	req.Params = fields
	return req
}

func requestMeta(params any) (map[string]json.RawMessage, bool) {
	fields, ok := objectFields(params)
	if !ok || fields["_meta"] == nil {
		return nil, false
	}
	return objectFields(fields["_meta"])
}
