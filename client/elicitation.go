package client

import (
	"context"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/resilientmcp/resilientmcp/client/internal/notify"
	"github.com/resilientmcp/resilientmcp/client/internal/streamable"
)

// The defaults of elicitation forms (SEP-1034) are client/internal/notify's
// (elicitation.go there); what stays here is the transport that declares
// them, which wraps the client's own.

// declaringTransport is a session's transport when the client applies
// elicitation defaults: it adds applyDefaults to the form elicitation
// capability the client declares, which mcp-go's types cannot express: in
// the initialize request in the session era, and in the capabilities every
// request carries in its _meta in the stateless era.
type declaringTransport struct {
	*streamable.Transport
}

func (t declaringTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	req.Params = notify.DeclareApplyDefaults(req.Method, req.Params)
	return t.Transport.SendRequest(ctx, req)
}

// transportFor is the transport a session's mcp-go client is given: tr,
// declaring the elicitation defaults if the client applies them.
func transportFor(tr *streamable.Transport, elicitationDefaults bool) transport.Interface {
	if elicitationDefaults {
		return declaringTransport{tr}
	}
	return tr
}
