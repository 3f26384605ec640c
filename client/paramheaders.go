package client

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

// On 2026-07-28 a tool's x-mcp-header arguments travel in Mcp-Param-*
// headers as well as in the body (SEP-2243), and a server refuses a call
// without them. mcp-go mirrors them only for a tool its own client listed,
// one per session: a caller who never lists tools, or whose listing went
// out on another session of the pool, would have every such call refused.
// A session's transport therefore mirrors them from the client's tool
// cache, and after a refusal for the headers lists the tools and sends the
// call again (policy.ParamHeadersRefused).

// toolSource is the client's tool cache, as a session's transport sees it.
type toolSource interface {
	KnownTool(name string) (t mcp.Tool, ok, current bool)
	LearnTools(ctx context.Context) error
}

// withParamHeaders returns req, a tools/call of the stateless era, with
// the Mcp-Param-* headers the cached definition of its tool calls for,
// and whether they differ from those req had. Unless replace is set, a
// request mcp-go already gave such headers is left as it is.
func (t *discoverRecorder) withParamHeaders(req transport.JSONRPCRequest, replace bool) (transport.JSONRPCRequest, bool) {
	if t.tools == nil || req.Header.Get(mcp.HeaderMethod) == "" || (!replace && hasParamHeaders(req.Header)) {
		return req, false
	}
	// mcp-go names the tool in Mcp-Name; the params are read only for a
	// tool that mirrors arguments, so other calls pay nothing for it.
	name, ok := mcp.DecodeHeaderValue(req.Header.Get(mcp.HeaderName))
	if !ok || name == "" {
		return req, false
	}
	tool, ok, _ := t.tools.KnownTool(name)
	if !ok || !mirrorsArguments(tool) {
		return req, false
	}
	raw, err := json.Marshal(req.Params)
	if err != nil {
		return req, false
	}
	want := http.Header{}
	for k, v := range mcp.GenerateParamHeaders(&tool, raw) {
		want.Set(k, v)
	}
	had := paramHeaders(req.Header)
	if maps.EqualFunc(want, had, slices.Equal) {
		return req, false
	}
	h := req.Header.Clone()
	for k := range had {
		h.Del(k)
	}
	maps.Copy(h, want)
	req.Header = h
	return req, true
}

// mirrorsArguments reports whether a tool's input schema may annotate an
// argument with x-mcp-header: a cheap test, which GenerateParamHeaders
// settles.
func mirrorsArguments(tool mcp.Tool) bool {
	if tool.RawInputSchema != nil {
		return bytes.Contains(tool.RawInputSchema, []byte(`"x-mcp-header"`))
	}
	return annotatesHeader(tool.InputSchema.Properties)
}

func annotatesHeader(props map[string]any) bool {
	for _, p := range props {
		prop, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if _, ok := prop["x-mcp-header"]; ok {
			return true
		}
		if sub, ok := prop["properties"].(map[string]any); ok && annotatesHeader(sub) {
			return true
		}
	}
	return false
}

// resendWithParamHeaders answers a tools/call refused for its headers, as
// policy.ParamHeadersRefused decides: it did not run; the tools are listed
// again, and it is sent again once if the listing calls for other headers.
func (t *discoverRecorder) resendWithParamHeaders(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) (*transport.JSONRPCResponse, error) {
	if err != nil || resp == nil || resp.Error == nil || t.tools == nil || !policy.ParamHeadersRefused(resp.Error.Code, false) {
		return resp, err
	}
	if t.tools.LearnTools(ctx) != nil {
		return resp, err
	}
	again, changed := t.withParamHeaders(req, true)
	if !changed {
		return resp, err
	}
	return t.StreamableHTTP.SendRequest(ctx, again)
}

func hasParamHeaders(h http.Header) bool {
	for k := range h {
		if isParamHeader(k) {
			return true
		}
	}
	return false
}

func paramHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if isParamHeader(k) {
			out[k] = v
		}
	}
	return out
}

func isParamHeader(key string) bool {
	return len(key) > len(mcp.HeaderParamPrefix) && strings.EqualFold(key[:len(mcp.HeaderParamPrefix)], mcp.HeaderParamPrefix)
}
