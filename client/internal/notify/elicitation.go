package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// Elicitation defaults (SEP-1034). A form the server asks the user to fill
// in may give a default for each field. When the user's elicitation handler
// accepts and leaves a field out, the client fills it in from the
// requestedSchema before the answer goes to the server, as the TypeScript
// SDK does, and declares that it does so in its capabilities
// (elicitation.form.applyDefaults). mcp-go v1.2.1 does neither.
//
// The handler is the one the caller gave mcp-go, through
// WithClientOptions(mcpclient.WithElicitationHandler(h)): the contract the
// caller already has. mcp-go's client options are opaque functions and its
// client does not hand its handler back, so the client reads it back the
// one way mcp-go allows: it applies the options to a client of its own on a
// transport that goes nowhere, whose Start gives the transport mcp-go's
// handler of server requests (which runs the user's elicitation handler),
// and whose Initialize shows whether an elicitation handler was set (mcp-go
// then declares the capability, as WithElicitationHandler documents). Every
// session then gets, after the caller's options, a handler that runs the
// caller's through that client and fills in the defaults. It serves both
// eras: the server's elicitation/create in the session era, and the input
// requests of a multi round-trip call in the stateless era.

// WithElicitationDefaults returns opts followed by an elicitation handler
// that applies defaults around the one opts set, and whether it did; opts
// as they are if they set no elicitation handler.
func WithElicitationDefaults(opts []mcpclient.ClientOption) ([]mcpclient.ClientOption, bool) {
	if len(opts) == 0 {
		return opts, false
	}
	probe := &optionProbe{}
	mc := mcpclient.NewClient(probe, opts...)
	ctx := context.Background()
	if err := mc.Start(ctx); err != nil || probe.incoming == nil {
		return opts, false
	}
	if _, err := mc.Initialize(ctx, mcp.InitializeRequest{}); err != nil || !probe.elicits {
		return opts, false
	}
	h := defaultsHandler{incoming: probe.incoming}
	return append(opts[:len(opts):len(opts)], mcpclient.WithElicitationHandler(h)), true
}

// optionProbe is the transport of the client WithElicitationDefaults reads
// the caller's options with. It sends nothing anywhere.
type optionProbe struct {
	incoming transport.RequestHandler
	elicits  bool // the initialize request declared elicitation
}

func (p *optionProbe) Start(context.Context) error { return nil }
func (p *optionProbe) Close() error                { return nil }
func (p *optionProbe) GetSessionId() string        { return "" }

func (p *optionProbe) SetNotificationHandler(func(mcp.JSONRPCNotification)) {}

func (p *optionProbe) SetRequestHandler(h transport.RequestHandler) { p.incoming = h }

func (p *optionProbe) SendNotification(context.Context, mcp.JSONRPCNotification) error {
	return nil
}

func (p *optionProbe) SendRequest(_ context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method != string(mcp.MethodInitialize) {
		// server/discover: taken for a server of the session era, so that
		// mcp-go goes on to initialize, which declares the capabilities.
		return nil, errors.New("the option probe answers only initialize")
	}
	var params struct {
		Capabilities mcp.ClientCapabilities `json:"capabilities"`
	}
	if raw, err := json.Marshal(req.Params); err == nil && json.Unmarshal(raw, &params) == nil {
		p.elicits = params.Capabilities.Elicitation != nil
	}
	result, _ := json.Marshal(mcp.InitializeResult{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ServerInfo:      mcp.Implementation{Name: "option-probe", Version: "0"},
	})
	return transport.NewJSONRPCResultResponse(req.ID, result), nil
}

// defaultsHandler is the elicitation handler every session gets: the
// caller's, run through the probe's client, then the defaults.
type defaultsHandler struct {
	incoming transport.RequestHandler
}

func (h defaultsHandler) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	resp, err := h.incoming(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(int64(0)),
		Method:  string(mcp.MethodElicitationCreate),
		Params:  req.Params,
	})
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return nil, err
	}
	applyElicitationDefaults(req.Params, &res)
	return &res, nil
}

// applyElicitationDefaults fills in the fields an accepted form left out
// from the defaults of its requestedSchema, as the TypeScript SDK does: the
// properties of an object schema, recursively into nested objects, and the
// alternatives of anyOf and oneOf. An accepted form with no content at all
// gets every default. Anything else is left as the handler answered.
func applyElicitationDefaults(params mcp.ElicitationParams, res *mcp.ElicitationResult) {
	if res.Action != mcp.ElicitationResponseActionAccept ||
		(params.Mode != "" && params.Mode != mcp.ElicitationModeForm) || params.RequestedSchema == nil {
		return
	}
	schema, ok := jsonValue(params.RequestedSchema).(map[string]any)
	if !ok {
		return
	}
	content := map[string]any{}
	if res.Content != nil {
		if content, ok = jsonValue(res.Content).(map[string]any); !ok {
			return
		}
	}
	if fillDefaults(schema, content) || res.Content == nil {
		res.Content = content
	}
}

// fillDefaults fills data from schema's defaults and reports whether it
// added anything.
func fillDefaults(schema map[string]any, data any) bool {
	added := false
	if obj, ok := data.(map[string]any); ok && schema["type"] == "object" {
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			prop, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if _, set := obj[name]; !set {
				if def, has := prop["default"]; has {
					obj[name] = def
					added = true
				}
			}
			if v, set := obj[name]; set {
				added = fillDefaults(prop, v) || added
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, _ := schema[key].([]any)
		for _, alt := range alts {
			if sub, ok := alt.(map[string]any); ok {
				added = fillDefaults(sub, data) || added
			}
		}
	}
	return added
}

// jsonValue is v as encoding/json decodes it into an any, with numbers kept
// as written (json.Number), or nil if v does not encode.
func jsonValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil
	}
	return out
}

// DeclareApplyDefaults returns params with elicitation.form.applyDefaults
// set in the capabilities it declares, if it declares form elicitation;
// params as they are otherwise, and if anything does not decode.
func DeclareApplyDefaults(method string, params any) any {
	var raw []byte
	var edit func(e *wire.Edit)
	if method == string(mcp.MethodInitialize) {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return params
		}
		edit = func(e *wire.Edit) {
			caps, _ := e.Param("capabilities")
			if caps, ok := withApplyDefaults(caps); ok {
				e.SetParam("capabilities", caps)
			}
		}
	} else {
		// The per-request metadata of the stateless era: mcp-go's params
		// are already a map of raw fields, the client's own requests'
		// (tasks.Request) raw JSON.
		switch p := params.(type) {
		case map[string]json.RawMessage:
			if p["_meta"] == nil {
				return params
			}
			var err error
			if raw, err = json.Marshal(p); err != nil {
				return params
			}
		case json.RawMessage:
			raw = p
		default:
			return params
		}
		edit = func(e *wire.Edit) {
			caps, _ := e.Meta(mcp.MetaKeyClientCapabilities)
			if caps, ok := withApplyDefaults(caps); ok {
				e.SetMeta(mcp.MetaKeyClientCapabilities, caps)
			}
		}
	}
	if out := wire.EditParams(raw, edit); out != nil {
		return json.RawMessage(out)
	}
	return params
}

// withApplyDefaults returns the capabilities caps with applyDefaults in
// their form elicitation capability; an empty elicitation capability means
// form, as the specification says.
func withApplyDefaults(caps json.RawMessage) (json.RawMessage, bool) {
	fields, ok := wire.ObjectFields(caps)
	if !ok || fields["elicitation"] == nil {
		return nil, false
	}
	elicitation, ok := wire.ObjectFields(fields["elicitation"])
	if !ok {
		return nil, false
	}
	if elicitation["form"] == nil && elicitation["url"] != nil {
		return nil, false // URL mode only
	}
	form := map[string]json.RawMessage{}
	if elicitation["form"] != nil {
		if form, ok = wire.ObjectFields(elicitation["form"]); !ok {
			return nil, false
		}
	}
	form["applyDefaults"] = json.RawMessage("true")
	var err error
	if elicitation["form"], err = json.Marshal(form); err != nil {
		return nil, false
	}
	if fields["elicitation"], err = json.Marshal(elicitation); err != nil {
		return nil, false
	}
	out, err := json.Marshal(fields)
	return out, err == nil
}
