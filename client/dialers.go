package client

import (
	"context"
	"errors"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/internal/sse"
	"github.com/resilientmcp/resilientmcp/client/internal/stdio"
	"github.com/resilientmcp/resilientmcp/client/internal/streamable"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// The sessions' side of the dialers that are not Streamable HTTP's: which
// one opens a session (nextSession, openFallingBack), what each is given
// (client/internal/sse opens a stream's session, client/internal/stdio a
// process's), and the client's session made of what it opened (adopt).

// What the endpoint was found to speak (sessions.spoken).
const (
	speaksStateless int32 = iota
	speaksSessionEra
	speaksSSE
)

// openFallingBack is open, and, with WithSSEFallback, an HTTP+SSE session
// in place of a Streamable HTTP one the endpoint refused as a legacy
// server would.
func (ss *sessions) openFallingBack(ctx context.Context) (*session, error) {
	s, err := ss.open(ctx)
	if err == nil || !ss.c.opts.sseFallback || !errors.Is(err, transport.ErrLegacySSEServer) {
		return s, err
	}
	s, sseErr := ss.openSSE(ctx, ss.initRequest())
	if sseErr != nil {
		ss.c.log.Info("initialize was answered as a legacy server would, and no HTTP+SSE stream either", "endpoint", ss.c.endpoint, "err", sseErr)
		return nil, err
	}
	ss.c.log.Info("the endpoint speaks HTTP+SSE (2024-11-05): the client uses it from now on", "endpoint", ss.c.endpoint)
	ss.spoken.Store(speaksSSE)
	return s, nil
}

// openSSE opens a session of the HTTP+SSE transport (client/internal/sse).
func (ss *sessions) openSSE(ctx context.Context, req *mcp.InitializeRequest) (*session, error) {
	c := ss.c
	hc := c.httpClient
	if own := wire.SessionClient(c.httpClient, !c.opts.noCookies); own != nil {
		hc = own // its cookie jar, as a Streamable HTTP session has
	}
	o, err := sse.Open(ctx, req, sse.Handshake{
		Endpoint: c.endpoint,
		Transport: sse.Config{
			Client: hc, Headers: c.opts.headers, HeaderFunc: c.opts.headerFunc,
			Limit: c.opts.maxResponseBytes, Log: c.log, Unmatched: &c.stats.WrongAnswers,
		},
		Options: c.opts.clientOptions, OnNotification: c.messages.Handle,
		Retryable: c.opts.retryableRPC, Failed: failedOpen,
		Unavailable: ErrUnavailable, AuthorizationRequired: ErrAuthorizationRequired,
	})
	if err != nil {
		return nil, err
	}
	return ss.adopt(o.Client, o.Result, req, nil, o.Attach)
}

// openStdio starts member's next process and initializes a session on it
// (client/internal/stdio).
func (ss *sessions) openStdio(ctx context.Context, member int, req *mcp.InitializeRequest) (*session, error) {
	c := ss.c
	o, err := ss.stdio.Open(ctx, member, req, stdio.Handshake{
		Options: c.opts.clientOptions, OnNotification: c.messages.Handle,
		Lifetime: c.lifetime, KeepSchemas: streamable.KeepSchemas, Failed: failedOpen,
	})
	if err != nil {
		return nil, err
	}
	return ss.adopt(o.Client, o.Result, req, o.Process, o.Attach)
}

// failedOpen is a failed handshake's error, err, with its verdict v.
func failedOpen(v policy.Verdict, err error) error { return &openError{verdict: v, err: err} }

// adopt is the client's session of mc, initialized with req (answered
// res) on a stream or on proc, a stdio server's process: notifications
// come on the stream or on stdout, always, with no event stream to open.
// attach tells replace of its loss from then on; if it was lost already,
// it is closed.
func (ss *sessions) adopt(mc *mcpclient.Client, res *mcp.InitializeResult, req *mcp.InitializeRequest, proc *stdio.Process, attach func(lost func(error)) error) (*session, error) {
	ss.c.stats.SessionsOpened.Add(1)
	version := mc.ProtocolVersion()
	s := &session{mc: mc, sessionEra: !mcp.IsModernProtocol(version), version: version, result: res, request: req, opened: time.Now(), proc: proc}
	s.streams.SetListening(true)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := attach(func(cause error) { ss.replace(s, cause) }); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// supervisor is the supervisor of a NewStdio client's processes, spec's
// command run once per pool member, and what it asks of the client.
func (ss *sessions) supervisor(spec stdio.Spec, so stdio.Options) *stdio.Supervisor {
	c := ss.c
	return stdio.NewSupervisor(stdio.Config{
		Spec: spec, Members: c.opts.poolSize,
		RestartLimit: so.RestartLimit, RestartWindow: so.RestartWindow, IdleStop: so.IdleStop,
		Limit: c.opts.maxResponseBytes, Log: c.log, NewBackOff: c.opts.newBackOff, Done: c.lifetime.Done(),
		Unavailable: ErrUnavailable, Wake: ss.pool.Wake, OnEvent: c.obs.Process,
		Idle: stdio.Idle{
			Closed:    c.closed.Load,
			Listening: c.messages.Listening, // subscribed, or listening
			Calls:     c.stats.Calls.Load,
			InFlight:  func() bool { return c.stats.InFlight.Load() > 0 },
			StopAll: func(retire func(member, pid int, stop func() bool) bool) (left bool) {
				for _, s := range ss.pool.Values() {
					if !retire(s.member, s.proc.PID(), func() bool { return ss.pool.Retire(s) }) {
						left = true
					}
				}
				return left
			},
		},
	})
}

// stdioStats fills in what Stats says of a stdio client's processes.
func (ss *sessions) stdioStats(st *Stats) {
	if ss.stdio == nil {
		return
	}
	sup := ss.stdio.Stats()
	st.Restarts, st.StdoutSkipped, st.LastExit, st.PID = sup.Restarts, sup.StdoutSkipped, sup.LastExit, sup.PID
	// A crash loop fails calls fast while no session is in service, as
	// the breaker does.
	if sup.Looping && st.Sessions == 0 {
		st.FailingFast = true
	}
}

// crashLoopFailFast is whileNoSession's answer for a stdio client whose
// processes are crash-looping: calls fail at once, with the last exit.
func (ss *sessions) crashLoopFailFast() error {
	if ss.stdio == nil {
		return nil
	}
	if why, last := ss.stdio.CrashLooping(); why != "" {
		return &failedFast{why: why, last: last}
	}
	return nil
}
