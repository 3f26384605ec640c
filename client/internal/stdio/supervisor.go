package stdio

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/internal/wait"
)

// Config is what a Supervisor is given by the client it supervises for:
// the command, the restart intensity, and what it needs of the client, as
// funcs, since this package knows nothing of sessions.
type Config struct {
	Spec          Spec
	Members       int           // the client's pool size: one process per member
	RestartLimit  int           // WithRestartLimit's: more than this many restarts
	RestartWindow time.Duration // within this is a crash loop
	IdleStop      time.Duration // WithIdleStop's; 0: never
	Limit         int64         // WithMaxResponseBytes
	Log           *slog.Logger
	NewBackOff    func() backoff.BackOff // WithBackOff's, for the steps of a crash loop
	Done          <-chan struct{}        // ends at the client's Close: no start is waited for after it
	// Unavailable wraps the error of a start that no retry can fix (the
	// command not found, not executable): the call learns at once.
	Unavailable error
	// Wake wakes the callers waiting for a session (the pool's): a crash
	// loop began, and they fail fast.
	Wake func()
	// OnEvent tells the observers of a process started or exited.
	OnEvent func(observe.Event)
	Idle    Idle // WithIdleStop's questions; unused without it
}

// Idle is what WithIdleStop's check asks the client: whether it is idle,
// and to stop its processes if so.
type Idle struct {
	Closed    func() bool   // the client is closed: the pool has closed the processes
	Listening func() bool   // a subscription or a Listen holds the processes; asked before idleMu is taken
	Calls     func() uint64 // calls begun so far (Stats().Calls)
	InFlight  func() bool   // a call is in flight
	// StopAll stops every process in service, each through Retire, and
	// reports whether one could not be (a call took it meanwhile).
	StopAll func(retire func(member, pid int, stop func() bool) bool) (left bool)
}

// Supervisor is what a NewStdio client keeps of its processes: per pool
// member, the restart intensity and the process running; for the client,
// the counts and the last exit; and WithIdleStop's check. Safe for
// concurrent use. mu and idleMu are leaf locks, never held together (nor
// with any lock of the client), and no code of the client's runs under
// them but Config.Idle's Calls and InFlight, which read counters.
type Supervisor struct {
	cfg      Config
	restarts atomic.Uint64
	skipped  atomic.Uint64 // stdout lines that were not JSON-RPC
	lastExit atomic.Pointer[observe.ProcessExit]

	mu    sync.Mutex
	slots []slot // by pool member

	idleMu    sync.Mutex  // guards the two below; a leaf
	idleTimer *time.Timer // WithIdleStop's check; made by the first process
	idleCalls uint64      // Stats().Calls at the last check
}

type slot struct {
	restarts policy.Restarts
	steps    backoff.BackOff // WithBackOff's, for the steps of a crash loop
	proc     *Process        // the last started
	started  bool
	idled    bool // its last process was stopped for idleness: the next start is no restart
}

// NewSupervisor returns the supervisor of cfg.Members processes of
// cfg.Spec's command. It starts none: Start does, for each member.
func NewSupervisor(cfg Config) *Supervisor {
	s := &Supervisor{cfg: cfg, slots: make([]slot, cfg.Members)}
	for i := range s.slots {
		s.slots[i].restarts = policy.Restarts{Limit: cfg.RestartLimit, Window: cfg.RestartWindow}
	}
	return s
}

// Command is the supervised command, for the log.
func (s *Supervisor) Command() string { return s.cfg.Spec.Command }

// crashLoopError is the cause of a dial made to wait past its deadline by
// the restart intensity.
type crashLoopError struct {
	next time.Time
	last *ExitError
}

func (e *crashLoopError) Error() string {
	msg := "server process crash-looping; next start in " + time.Until(e.next).Round(time.Millisecond).String()
	if e.last != nil {
		msg += ": " + e.last.Error()
	}
	return msg
}
func (e *crashLoopError) Unwrap() error {
	if e.last == nil {
		return nil
	}
	return e.last
}

// Start starts member's next process, once the restart intensity lets it
// (a crash loop), within ctx: the first half of Open, which initializes a
// session on it.
func (s *Supervisor) Start(ctx context.Context, member int) (*Process, error) {
	if err := s.awaitStart(ctx, member); err != nil {
		return nil, err
	}
	p, err := Start(&s.cfg.Spec, s.cfg.Limit, s.cfg.Log, &s.skipped, func(p *Process) { s.ended(member, p) })
	restart := s.record(member, p)
	if err != nil {
		if policy.StartPermanent(err) {
			// The call learns at once, and the next call tries again.
			return nil, backoff.Permanent(fmt.Errorf("%w: %w", s.cfg.Unavailable, err))
		}
		return nil, err
	}
	if restart {
		s.restarts.Add(1)
	}
	s.cfg.OnEvent(observe.ProcessStarted{PID: p.PID(), Member: member, Restart: restart})
	s.cfg.Log.Info("server process started", "command", s.cfg.Spec.Command, "pid", p.PID(), "member", member, "restart", restart)
	return p, nil
}

// awaitStart waits until member's next process may start, as the restart
// intensity says; if that is past ctx's deadline, it fails at once and the
// pool's loop tries again on its schedule.
func (s *Supervisor) awaitStart(ctx context.Context, member int) error {
	s.mu.Lock()
	slot := &s.slots[member]
	var step time.Duration
	if slot.restarts.Looping() {
		if slot.steps == nil {
			slot.steps = s.cfg.NewBackOff()
		}
		step = slot.steps.NextBackOff()
	}
	looping := slot.restarts.Looping()
	at := slot.restarts.Next(time.Now(), max(step, 0))
	nowLooping := slot.restarts.Looping()
	s.mu.Unlock()
	if nowLooping && !looping {
		s.cfg.Log.Warn("server process crash-looping: starts slowed down, calls without a process fail fast",
			"member", member, "limit", s.cfg.RestartLimit, "window", s.cfg.RestartWindow)
		s.cfg.Wake()
	}
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return &crashLoopError{next: at, last: s.lastExitError()}
	}
	switch wait.Sleep(ctx, d, s.cfg.Done) {
	case wait.Elapsed:
		return nil
	}
	return &crashLoopError{next: at, last: s.lastExitError()}
}

// record records a start of member's process (p nil: it failed to start);
// it reports whether it was a restart.
func (s *Supervisor) record(member int, p *Process) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	slot := &s.slots[member]
	if slot.idled {
		slot.idled, slot.started = false, false
		slot.restarts = policy.Restarts{Limit: slot.restarts.Limit, Window: slot.restarts.Window}
	}
	slot.restarts.Started(time.Now())
	restart := slot.started
	slot.started = true
	if p != nil {
		slot.proc = p
	}
	return restart
}

// ended records the exit of member's process p, for Stats and errors, the
// restart intensity and the observers. It is told by p's wait, before the
// loss of p's session is.
func (s *Supervisor) ended(member int, p *Process) {
	exit := p.Exit()
	s.lastExit.Store(&exit)
	s.mu.Lock()
	slot := &s.slots[member]
	slot.restarts.Exited(exit.Uptime)
	if !slot.restarts.Looping() {
		slot.steps = nil
	}
	s.mu.Unlock()
	s.cfg.OnEvent(observe.ProcessExited{Exit: exit, Member: member, Stopped: p.Stopping()})
}

func (s *Supervisor) lastExitError() *ExitError {
	if e := s.lastExit.Load(); e != nil {
		return &ExitError{Exit: *e}
	}
	return nil
}

// CrashLooping is why calls with no process to go to fail at once, and
// the last exit, if a member's process is crash-looping; "" if none is.
func (s *Supervisor) CrashLooping() (why string, last error) {
	s.mu.Lock()
	looping := false
	for i := range s.slots {
		looping = looping || s.slots[i].restarts.Looping()
	}
	s.mu.Unlock()
	if !looping {
		return "", nil
	}
	why = fmt.Sprintf("failing fast: the server process is crash-looping (more than %d restarts within %v)", s.cfg.RestartLimit, s.cfg.RestartWindow)
	if e := s.lastExitError(); e != nil {
		last = e
	}
	return why, last
}

// Stats is what Stats says of a stdio client's processes.
type Stats struct {
	Restarts, StdoutSkipped uint64
	LastExit                observe.ProcessExit
	PID                     int  // of a process running, 0 if none is
	Looping                 bool // a member's process is crash-looping
}

// Stats reads the counts, the last exit, a process running and whether
// one is crash-looping.
func (s *Supervisor) Stats() Stats {
	st := Stats{Restarts: s.restarts.Load(), StdoutSkipped: s.skipped.Load()}
	if e := s.lastExit.Load(); e != nil {
		st.LastExit = *e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.slots {
		if p := s.slots[i].proc; p != nil && !p.HasExited(0) && st.PID == 0 {
			st.PID = p.PID()
		}
		st.Looping = st.Looping || s.slots[i].restarts.Looping()
	}
	return st
}

// ArmIdleStop (re)starts WithIdleStop's check: a timer, no goroutine.
func (s *Supervisor) ArmIdleStop() {
	d := s.cfg.IdleStop
	if d <= 0 {
		return
	}
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.idleCalls = s.cfg.Idle.Calls()
	if s.idleTimer == nil {
		s.idleTimer = time.AfterFunc(d, s.checkIdle)
	} else {
		s.idleTimer.Reset(d)
	}
}

// checkIdle stops the processes if no call began in the last period and
// none is in flight, and nothing listens; else it looks again a period
// later. After Close it does nothing: the pool has closed the processes.
func (s *Supervisor) checkIdle() {
	idle := &s.cfg.Idle
	if idle.Closed() {
		return
	}
	listening := idle.Listening()
	s.idleMu.Lock()
	calls := idle.Calls()
	busy := calls != s.idleCalls || idle.InFlight() || listening
	s.idleCalls = calls
	if busy {
		s.idleTimer.Reset(s.cfg.IdleStop)
		s.idleMu.Unlock()
		return
	}
	s.idleMu.Unlock()
	if idle.StopAll(s.retireIdle) {
		s.ArmIdleStop()
	}
}

// retireIdle stops member's process pid, for idleness, with stop (the
// pool's Retire of its session); it reports whether it was stopped.
func (s *Supervisor) retireIdle(member, pid int, stop func() bool) bool {
	s.mu.Lock()
	s.slots[member].idled = true
	s.mu.Unlock()
	if stop() {
		s.cfg.Log.Info("server process stopped: idle", "pid", pid, "member", member, "idle_stop", s.cfg.IdleStop)
		return true
	}
	s.mu.Lock()
	s.slots[member].idled = false // a call took it meanwhile
	s.mu.Unlock()
	return false
}

// inheritedEnv are the variables of the agent's environment a stdio server
// gets, as the TypeScript SDK's getDefaultEnvironment has them.
var inheritedEnv = func() []string {
	if runtime.GOOS == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
}()

// Env is a stdio server's environment: the inherited variables of
// environ (not shell functions, whose values start with "()"), then extra.
func Env(environ, extra []string) []string {
	var env []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		for _, want := range inheritedEnv {
			same := k == want
			if runtime.GOOS == "windows" {
				same = strings.EqualFold(k, want) // Path is PATH there
			}
			if same && !strings.HasPrefix(v, "()") {
				env = append(env, kv)
			}
		}
	}
	return append(env, extra...)
}
