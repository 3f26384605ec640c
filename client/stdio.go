package client

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/notify"
	"github.com/resilientmcp/resilientmcp/client/internal/observers"
	"github.com/resilientmcp/resilientmcp/client/internal/stdio"
)

// NewStdio returns a client for the MCP server that command (run with
// args) serves over stdio: a process the client starts, supervises and
// ends. Like New it validates and does no I/O: the process starts on the
// first call (or Initialize).
//
// It is the same ResilientClient as over HTTP, with the same methods,
// errors, Stats, observer events, State and policy: a process that exits
// (any status, any signal) or closes its stdout is a lost session, and one
// that does not answer its keepalive ping within WithKeepAliveTimeout is a
// hung one; either way calls in flight that are safe to repeat are sent
// again on a new process, started at once as a lost HTTP session is
// redialled (then on WithBackOff's schedule while starts fail) and
// initialized, with subscriptions and the logging level restored; the
// others end with ErrOutcomeUnknown, since the process may have run them
// before it died. More restarts than WithRestartLimit allows are a crash
// loop: calls with no process to go to fail at once with ErrUnavailable,
// the last exit and stderr lines in the error (*ProcessExitError), and one
// start is tried per step after that.
//
// A process is ended by closing its stdin, then SIGTERM after the grace
// period (WithStdioStopTimeout), then SIGKILL, each sent to its whole
// process group, so that what it started (npx's node, a shell script's
// children) goes with it, and it is always reaped. A child that leaves the
// group (setsid) is out of reach. Outside unix there is no group: the
// process alone is killed after the grace period.
//
// Its stderr goes to WithLogger's logger (at most 50 lines a second), and
// its last 20 lines are kept for errors and Stats().LastExit. Stdout lines
// that are not JSON-RPC (a server that logs there) are skipped and counted
// (Stats().StdoutSkipped). An answer longer than WithMaxResponseBytes is
// read no further than the limit and fails its call with
// ErrResponseTooLarge (with ErrOutcomeUnknown: it ran), never sent again,
// as over HTTP; the process is kept if the answer's id came before the
// limit (mcp-go's and go-sdk's servers write it first), else, as for a line
// that never ends, the session is lost.
//
// It is safe for concurrent use by any number of goroutines, as a client of
// New is. Close ends the processes and returns once they are reaped: up to
// twice WithStdioStopTimeout for one that ignores stdin's end and SIGTERM.
//
// The environment is only HOME, LOGNAME, PATH, SHELL, TERM and USER of the
// agent's (on Windows its system variables), plus WithStdioEnv: a secret
// in the agent's environment reaches a server only if passed on purpose.
//
// WithIdleStop stops the processes after a period with no call and no
// subscription; the next call starts them again.
//
// The options about HTTP (WithHTTPClient, WithTLSConfig,
// WithTransportWrapper, WithHeaders, WithHeaderFunc, WithBearerToken,
// WithOAuth, WithCookies) are refused; WithPoolSize(n) runs n processes of
// the command, each supervised on its own, and calls go to the least loaded
// (for servers that are single-threaded).
func NewStdio(command string, args []string, opts ...Option) (*ResilientClient, error) {
	if command == "" {
		return nil, errors.New("resilientmcp: NewStdio: empty command")
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	switch {
	case o.httpClient != nil, o.tlsConfig != nil, o.wrapTransport != nil, len(o.headers) > 0, o.headerFunc != nil,
		o.bearerToken != nil, o.oauth != nil, o.noCookies:
		o.invalidf("an option about HTTP (WithHTTPClient, WithTLSConfig, WithTransportWrapper, WithHeaders, WithHeaderFunc, WithBearerToken, WithOAuth, WithCookies) given to NewStdio: the server is a process")
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("resilientmcp: invalid options: %w", err)
	}
	so := o.stdioOpts().WithDefaults(stdio.Options{
		RestartLimit: DefaultRestartLimit, RestartWindow: DefaultRestartWindow, StopTimeout: DefaultStdioStopTimeout,
	})
	var elicitationDefaults bool
	o.clientOptions, elicitationDefaults = notify.WithElicitationDefaults(o.clientOptions)

	c := &ResilientClient{endpoint: "stdio:" + command, opts: o, log: o.logger,
		obs: observers.New(o.observing, &url.URL{Scheme: "stdio", Host: filepath.Base(command)}, errorClass)}
	c.elicitationDefaults = elicitationDefaults
	c.init(c.endpoint)
	c.sess.stdio = c.sess.supervisor(stdio.Spec{Command: command, Args: args, Env: stdio.Env(os.Environ(), so.Env), Dir: so.Dir, StopTimeout: so.StopTimeout}, so)
	return c, nil
}

// stdioOpts is o's stdio options, made by the first one given: a client
// over HTTP holds a nil pointer instead of them (BenchmarkIdleClients), and
// New refuses a client given any.
func (o *options) stdioOpts() *stdio.Options {
	if o.stdio == nil {
		o.stdio = &stdio.Options{}
	}
	return o.stdio
}

// The restart intensity by default: more than 5 restarts within 10 s is a
// crash loop. This is systemd's default (StartLimitBurst=5 in
// StartLimitIntervalSec=10s) rather than Erlang/OTP's (1 in 5 s): an OTP
// supervisor restarts a process in microseconds and escalates to its own
// supervisor, while a stdio server is often started through npx or a
// runtime that takes a second or more, and a server that dies of a bad
// request now and then is no crash loop. Five quick restarts take the
// default backoff about 1.5 s; after that one start is tried per step, the
// steps 2 s apart and doubling up to the window, so a crash loop makes
// about 8 starts in its first 10 s and then one every 10 s.
const (
	DefaultRestartLimit  = 5
	DefaultRestartWindow = 10 * time.Second
)

// DefaultStdioStopTimeout is how long a stdio server is given to exit
// after its stdin is closed, and again after SIGTERM, before SIGKILL: the
// TypeScript SDK's 2 s.
const DefaultStdioStopTimeout = 2 * time.Second

// WithStdioEnv adds variables, each "KEY=value", to the environment of a
// stdio server's process (NewStdio), after the few it inherits from the
// agent's; a later one wins over an earlier one of the same key.
func WithStdioEnv(env ...string) Option {
	env = append([]string(nil), env...)
	return optionFunc(func(o *options) {
		so := o.stdioOpts()
		for _, kv := range env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				o.invalidf("WithStdioEnv(%q): want KEY=value", kv)
			}
		}
		so.Env = append(so.Env, env...)
	})
}

// WithStdioDir sets the working directory of a stdio server's process
// (NewStdio). Default: the agent's.
func WithStdioDir(dir string) Option {
	return optionFunc(func(o *options) { o.stdioOpts().Dir = dir })
}

// WithRestartLimit sets the restart intensity of a stdio server (NewStdio):
// more than n restarts of a process within window is a crash loop. Calls
// that find no process in service then fail at once with ErrUnavailable
// (and the last exit, *ProcessExitError), and one start is tried per step:
// WithBackOff's, at least window/n, doubling up to window. A process that
// runs for a whole window ends the crash loop. Default 5 in 10 s (see
// DefaultRestartLimit). n must be at least 1, window positive.
func WithRestartLimit(n int, window time.Duration) Option {
	return optionFunc(func(o *options) {
		so := o.stdioOpts()
		if n < 1 || window <= 0 {
			o.invalidf("WithRestartLimit(%d, %v): want at least one restart in a positive window", n, window)
		}
		so.RestartLimit, so.RestartWindow = n, window
	})
}

// WithStdioStopTimeout sets how long a stdio server's process (NewStdio) is
// given to exit after its stdin is closed, and again after SIGTERM, before
// SIGKILL. Default 2 s (DefaultStdioStopTimeout).
func WithStdioStopTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		so := o.stdioOpts()
		if d <= 0 {
			o.invalidf("WithStdioStopTimeout(%v): want a positive duration", d)
		}
		so.StopTimeout = d
	})
}

// WithIdleStop stops a stdio server's processes (NewStdio) after d with no
// call, no subscription and no Listen (between d and 2d after the last
// call ended), and starts them again on the next call: an agent configured
// with 40 servers does not run 40 idle processes. A stop for idleness is
// not a restart (Stats().Restarts, WithRestartLimit). Default 0: never.
func WithIdleStop(d time.Duration) Option {
	return optionFunc(func(o *options) {
		so := o.stdioOpts()
		if d < 0 {
			o.invalidf("WithIdleStop(%v): want a duration of 0 (never) or more", d)
		}
		so.IdleStop = d
	})
}

// ProcessExitError is the cause of the loss of a stdio server's session
// when its process exited, and of calls that failed fast while it was
// crash-looping: the exit, and its last stderr lines. Immutable.
type ProcessExitError = stdio.ExitError

// ErrStdoutLineTooLong is the cause of the loss of a stdio session whose
// server wrote a line longer than WithMaxResponseBytes that is not an
// answer whose id could be read before the limit.
var ErrStdoutLineTooLong = stdio.ErrLineTooLong
