package stdio

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// Handshake is what opening a session on a process asks of the client,
// given for each open: this package knows nothing of the client's
// sessions.
type Handshake struct {
	Options        []mcpclient.ClientOption      // mcp-go's client options, the caller's
	OnNotification func(mcp.JSONRPCNotification) // every notification of the session's
	// Lifetime is the client's: mcp-go answers the server's requests
	// (sampling, elicitation, roots) under it.
	Lifetime context.Context
	// KeepSchemas is given the result of every tools/list answered, under
	// its request's context, as the HTTP transport gives it: the listings
	// keep the tools' schemas as the server sent them.
	KeepSchemas func(context.Context, json.RawMessage)
	// Failed is the error of a failed initialize (err), with its verdict:
	// the client's own, which the client's breaker reads back.
	Failed func(v policy.Verdict, err error) error
}

// Session is a session initialized on a process of the supervisor's, not
// yet attached (Attach) to the client's session made of it.
type Session struct {
	Client  *mcpclient.Client
	Result  *mcp.InitializeResult
	Process *Process
	sup     *Supervisor
}

// Open starts member's next process and initializes a session on it:
// the stdio counterpart of the client's open of a Streamable HTTP session.
// The start waits as the restart intensity says (a crash loop), within
// ctx.
func (s *Supervisor) Open(ctx context.Context, member int, req *mcp.InitializeRequest, h Handshake) (*Session, error) {
	p, err := s.Start(ctx, member)
	if err != nil {
		return nil, err
	}

	mc := mcpclient.NewClient(stdioTransport{transport.NewIO(p.filter, stdinWriter{p}, nil), p.filter, h.KeepSchemas}, h.Options...)
	fail := func(err error) (*Session, error) {
		_ = mc.Close()
		p.Stop()
		return nil, err
	}
	// Not ctx, which ends with the dial: mcp-go answers the server's
	// requests (sampling, elicitation, roots) under this one.
	if err := mc.Start(h.Lifetime); err != nil {
		return fail(err)
	}
	mc.OnNotification(h.OnNotification)
	res, err := mc.Initialize(ctx, *req)
	if err != nil {
		v := policy.Classify(err, policy.Session{}, nil, ctx.Err() != nil)
		if p.HasExited(tailWait) {
			err = fmt.Errorf("%w (%w)", err, &ExitError{Exit: p.Exit()})
		}
		err = h.Failed(v, fmt.Errorf("initialize: %w", err))
		if v.Permanent() {
			err = backoff.Permanent(err)
		}
		return fail(err)
	}
	return &Session{Client: mc, Result: res, Process: p, sup: s}, nil
}

// Attach tells lost of the loss of the session from now on (its process
// exited, closed its stdout, or wrote a line that never ends), and arms
// the idle stop. An error is why the session was lost already: the caller
// closes it.
func (s *Session) Attach(lost func(cause error)) error {
	if err := s.Process.attach(lost); err != nil {
		return err
	}
	s.sup.ArmIdleStop()
	return nil
}

// stdioTransport is mcp-go's stdio transport over the pipes of a process
// of the client's, with the answers the stdoutFilter skipped as over the
// limit failing their requests as HTTP's do: ErrResponseTooLarge, on the
// call's exchange, for the policy.
type stdioTransport struct {
	*transport.Stdio
	filter      *Filter
	keepSchemas func(context.Context, json.RawMessage)
}

func (t stdioTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.Stdio.SendRequest(ctx, req)
	if err == nil && t.filter.tooLargeAnswer(resp) {
		wire.RefuseTooLarge(ctx, t.filter.limit)
		return nil, fmt.Errorf("answer over the limit of %d bytes (WithMaxResponseBytes)", t.filter.limit)
	}
	if err == nil && resp != nil && resp.Error == nil && req.Method == string(mcp.MethodToolsList) {
		t.keepSchemas(ctx, resp.Result) // as the HTTP transport does
	}
	return resp, err
}
