package stdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/client/observe"
)

// Spec is what a stdio server's process is started from.
type Spec struct {
	Command     string
	Args        []string
	Env         []string
	Dir         string
	StopTimeout time.Duration // WithStdioStopTimeout: stdin closed → SIGTERM → SIGKILL
}

// Process is one run of a stdio server's command: its process group,
// the client's ends of its pipes, and what it left when it exited. It is
// the process of one session (one pool member's generation); a new session
// is a new process.
//
// Three goroutines follow it while it runs: mcp-go's reader of stdout
// (through the Filter), readStderr and wait. wait is the only one
// that reaps it, so that no zombie is left whoever ends it.
//
// Its methods are safe for concurrent use.
type Process struct {
	cmd      *exec.Cmd
	pid      int
	started  time.Time
	grace    time.Duration // WithStdioStopTimeout: stdin closed → SIGTERM → SIGKILL
	log      *slog.Logger
	stdin    *os.File // written by mcp-go; closing it asks the server to exit
	stdout   *os.File // read by mcp-go through filter
	stderr   *os.File // read by readStderr
	filter   *Filter
	tail     stderrTail
	stderrLn lineLog

	exited     chan struct{} // closed by wait once the process exited and was reaped; exit is set then
	exit       observe.ProcessExit
	stderrDone chan struct{} // readStderr is over
	done       chan struct{} // wait is over: group ended, pipes closed

	stopping atomic.Bool      // the client ended it: its exit is no crash
	termSent atomic.Bool      // stop sent SIGTERM to the group, and waited
	onExit   func(p *Process) // told of the exit, once, before the loss
	mu       sync.Mutex       // guards lost and onLost; a leaf
	lost     error            // why its session is lost, once it is
	onLost   func(error)      // the session is lost: the process exited, or its stdout ended or broke
}

// tailWait is how long an exit waits for the last lines of stderr and
// stdout (a grandchild may hold them open): the record and the last answers
// are in the pipes by the time the process has exited, and read at once.
const tailWait = 200 * time.Millisecond

// Start starts spec's command in a process group of its own, with
// pipes of the client's. It returns once the process started; nothing is
// written to it yet.
func Start(spec *Spec, limit int64, log *slog.Logger, skipped *atomic.Uint64, onExit func(*Process)) (*Process, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	ownProcessGroup(cmd)
	var files []*os.File // every pipe end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		files = append(files, r, w)
		return r, w, err
	}
	fail := func(err error) (*Process, error) {
		for _, f := range files {
			_ = f.Close()
		}
		return nil, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(err)
	}
	// Every one an *os.File: os/exec starts no goroutine to copy, and
	// Wait returns when the process exits, whoever still holds a pipe.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("starting %s: %w", spec.Command, err))
	}
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	p := &Process{
		cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), grace: spec.StopTimeout, log: log.With("pid", cmd.Process.Pid),
		stdin: inW, stdout: outR, stderr: errR,
		exited: make(chan struct{}), stderrDone: make(chan struct{}), done: make(chan struct{}),
		onExit: onExit,
	}
	p.filter = newStdoutFilter(outR, limit, skipped, p)
	p.stderrLn.log = p.log
	go p.readStderr()
	go p.wait()
	return p, nil
}

// wait reaps the process, records its exit, reports the loss of its
// session (a crash, unless the client stopped it), and ends what it left:
// the rest of its process group, and the pipes.
func (p *Process) wait() {
	defer close(p.done)
	_ = p.cmd.Wait()
	when := time.Now()
	if !p.stopping.Load() {
		// A crash: its last words, and the last answers it wrote, which
		// reach their calls.
		waitFor(p.stderrDone, tailWait)
		waitFor(p.filter.ended, tailWait)
	}
	p.exit = exitOf(p.pid, p.cmd.ProcessState, p.started, when, p.tail.lines())
	close(p.exited)
	if p.onExit != nil {
		p.onExit(p)
	}
	if !p.stopping.Load() {
		p.log.Warn("server process exited", "exit", p.exit.String(), "uptime", p.exit.Uptime.Round(time.Millisecond))
	}
	p.lose(&ExitError{Exit: p.exit})
	// The leader is gone; what it started in its group goes too (a
	// server started through npx or a shell).
	if groupAlive(p.pid) {
		if !p.termSent.Load() { // stop sent it already, and waited
			signalGroup(p.pid, sigTerm)
			waitGroupGone(p.pid, p.grace)
		}
		signalGroup(p.pid, sigKill)
		waitGroupGone(p.pid, p.grace)
	}
	// A process outside the group (it called setsid) may still hold the
	// pipes: close the client's ends, which ends the readers.
	_ = p.stdout.Close()
	_ = p.stderr.Close()
	_ = p.stdin.Close()
	<-p.stderrDone
}

// lose reports the loss of the process's session, once, unless the client
// is ending it.
func (p *Process) lose(cause error) {
	p.mu.Lock()
	if p.lost != nil {
		p.mu.Unlock()
		return
	}
	p.lost = cause
	onLost := p.onLost
	p.mu.Unlock()
	if onLost != nil && !p.stopping.Load() {
		onLost(cause)
	}
}

// attach sets what is told of the loss of the process's session, once the
// session exists; if it was lost already, it returns why.
func (p *Process) attach(onLost func(error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost != nil {
		return p.lost
	}
	p.onLost = onLost
	return nil
}

// stop ends the process as the MCP specification's stdio shutdown has it:
// stdin closed, then SIGTERM after the grace period, then SIGKILL, each to
// the whole process group. It returns once the process was reaped and its
// group is gone (or was sent SIGKILL and given the grace period), or,
// for a process that SIGKILL does not end in killWait, without it.
func (p *Process) stop() {
	p.stopping.Store(true)
	_ = p.stdin.Close()
	if !waitFor(p.exited, p.grace) {
		p.log.Info("server process still running after stdin closed; sending SIGTERM", "grace", p.grace)
		p.termSent.Store(true)
		signalGroup(p.pid, sigTerm)
		if !waitFor(p.exited, p.grace) {
			p.log.Warn("server process ignored SIGTERM; sending SIGKILL", "grace", p.grace)
			signalGroup(p.pid, sigKill)
			_ = p.cmd.Process.Kill() // the leader alone, where there are no groups
		}
	}
	// SIGKILL cannot be ignored, but a process in uninterruptible sleep
	// (a hung NFS mount) acts on it only when it wakes: Close does not
	// wait for that.
	if !waitFor(p.done, killWait+2*p.grace) {
		p.log.Error("server process not ended after SIGKILL; left behind", "wait", killWait)
	}
}

// killWait is how long stop waits for a process and its group to be gone
// after SIGKILL.
const killWait = 5 * time.Second

// waitFor waits for ch to close, at most d; it reports whether it closed.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// waitGroupGone polls, every 10ms and for at most d, until no process of
// the group led by pgid is left.
func waitGroupGone(pgid int, d time.Duration) bool {
	for range max(int(d/(10*time.Millisecond)), 1) {
		if !groupAlive(pgid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return !groupAlive(pgid)
}

// readStderr reads the process's stderr to its end: each line to the
// logger (bounded: lineLog) and to the tail kept for errors and Stats.
func (p *Process) readStderr() {
	defer close(p.stderrDone)
	r := bufio.NewReaderSize(p.stderr, maxStderrLine)
	for {
		line, err := readCappedLine(r)
		if len(line) > 0 {
			p.tail.add(line)
			p.stderrLn.line(line)
		}
		if err != nil {
			return
		}
	}
}

// maxStderrLine is the longest stderr line kept; the rest of a longer line
// is dropped.
const maxStderrLine = 1024

// readCappedLine reads one line of at most r's buffer size, without its
// line ending; the rest of a longer line is read and dropped.
func readCappedLine(r *bufio.Reader) (string, error) {
	b, err := r.ReadSlice('\n')
	line := strings.TrimRight(string(b), "\r\n")
	if errors.Is(err, bufio.ErrBufferFull) {
		line += "…"
	}
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = r.ReadSlice('\n')
	}
	return line, err
}

// stderrTail is the last lines a process wrote to stderr. Safe for
// concurrent use.
type stderrTail struct {
	mu   sync.Mutex
	ring [stderrTailLines]string
	n    int // lines written
}

// stderrTailLines is how many of the last stderr lines are kept: enough
// for a stack trace's head or a few log lines before an exit.
const stderrTailLines = 20

func (t *stderrTail) add(line string) {
	t.mu.Lock()
	t.ring[t.n%stderrTailLines] = line
	t.n++
	t.mu.Unlock()
}

func (t *stderrTail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := min(t.n, stderrTailLines)
	out := make([]string, 0, k)
	for i := t.n - k; i < t.n; i++ {
		out = append(out, t.ring[i%stderrTailLines])
	}
	return out
}

// lineLog logs a process's stderr lines, at most stderrLogRate a second:
// a server that writes stderr in a loop must not flood the agent's log.
// The lines not logged are counted, and the count logged with the next
// second's first line. Used by readStderr only.
type lineLog struct {
	log     *slog.Logger
	second  time.Time
	n       int
	dropped int
}

const stderrLogRate = 50

func (l *lineLog) line(s string) {
	now := time.Now()
	if now.Sub(l.second) >= time.Second {
		if l.dropped > 0 {
			l.log.Warn("server stderr lines not logged (more than 50 a second)", "dropped", l.dropped)
		}
		l.second, l.n, l.dropped = now, 0, 0
	}
	if l.n++; l.n > stderrLogRate {
		l.dropped++
		return
	}
	l.log.Info("server stderr", "line", s)
}

// Filter is what mcp-go reads of the process's stdout: its JSON
// lines. A line that is not JSON (a server that logs to stdout) is skipped
// and counted, never a crash. A line longer than WithMaxResponseBytes is
// read no further than the limit: if its id can be read in what came of it
// (a JSON-RPC answer that puts its id before its result, as mcp-go's and
// go-sdk's do), the rest of it is skipped and its request fails with
// ErrResponseTooLarge (tooLargeAnswer, stdioTransport), as an HTTP answer
// over the limit does; if not, the stream ends there, and the session with
// it. It is read by mcp-go's reader goroutine only.
type Filter struct {
	r       *bufio.Reader
	limit   int64
	skipped *atomic.Uint64 // the client's count
	p       *Process
	line    []byte
	pending []byte
	err     error
	ended   chan struct{} // closed when the stream ended
	marker  string        // the message of the error answer that stands for a line over the limit
}

func newStdoutFilter(r io.Reader, limit int64, skipped *atomic.Uint64, p *Process) *Filter {
	return &Filter{r: bufio.NewReaderSize(r, 64<<10), limit: limit, skipped: skipped, p: p, ended: make(chan struct{}),
		marker: fmt.Sprintf("resilientmcp: stdout line over the limit (%d)", p.pid)}
}

// ErrLineTooLong is the cause of the loss of a stdio session whose
// server wrote a line longer than WithMaxResponseBytes that is not an
// answer whose id could be read before the limit.
var ErrLineTooLong = errors.New("resilientmcp: the server wrote a stdout line longer than the response limit")

func (f *Filter) Read(b []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, err := f.next()
		switch trimmed := bytes.TrimSpace(line); {
		case len(trimmed) == 0:
		case trimmed[0] == '{' || trimmed[0] == '[':
			f.pending = line
		default:
			f.skipped.Add(1)
			f.p.log.Debug("server stdout line skipped: not JSON-RPC", "line", truncate(trimmed, 200))
		}
		if err != nil {
			f.end(err)
		}
	}
	n := copy(b, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next reads the next line, its newline included.
func (f *Filter) next() ([]byte, error) {
	f.line = f.line[:0]
	for {
		chunk, err := f.r.ReadSlice('\n')
		if int64(len(f.line)+len(chunk)) > f.limit {
			return f.overLimit(chunk, err)
		}
		f.line = append(f.line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return f.line, err
		}
	}
}

// overLimit handles a line that went over the limit with chunk: in its
// place, an error answer to the request it answers, marked, and the rest of
// the line skipped; or, if its id is not in what came of it, the end of
// the stream.
func (f *Filter) overLimit(chunk []byte, err error) ([]byte, error) {
	f.line = append(f.line, chunk[:f.limit-int64(len(f.line))]...)
	id := wire.AnswerID(f.line)
	f.line = f.line[:0]
	if id == nil {
		return nil, ErrLineTooLong
	}
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = f.r.ReadSlice('\n')
	}
	if err != nil {
		return nil, err
	}
	f.p.log.Warn("server stdout line over the response limit; skipped, and its request failed", "limit", f.limit, "id", string(id))
	msg, _ := json.Marshal(f.marker)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, mcp.INTERNAL_ERROR, msg), nil
}

// tooLargeAnswer reports whether resp is the error answer the filter put in
// place of a line over the limit.
func (f *Filter) tooLargeAnswer(resp *transport.JSONRPCResponse) bool {
	return resp != nil && resp.Error != nil && resp.Error.Message == f.marker
}

// end ends the stream: mcp-go's reader sees the end of it (io.EOF, which
// it does not log as an error) and fails what is in flight. The session is
// lost: with the exit as its cause if the process is exiting.
func (f *Filter) end(err error) {
	f.err = io.EOF
	close(f.ended)
	cause := err
	switch {
	case errors.Is(err, ErrLineTooLong):
		f.p.log.Warn("server stdout line over the response limit; the process is replaced", "limit", f.limit)
	case waitFor(f.p.exited, tailWait):
		cause = &ExitError{Exit: f.p.exit}
	default:
		cause = errors.New("resilientmcp: the server process closed its stdout")
	}
	f.p.lose(cause)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// PID is the process's id.
func (p *Process) PID() int { return p.pid }

// Exited is closed once the process exited and was reaped; Exit is set
// then.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Exit is how the process exited; read it once Exited is closed.
func (p *Process) Exit() observe.ProcessExit { return p.exit }

// HasExited reports whether the process exited, waiting for it at most d.
func (p *Process) HasExited(d time.Duration) bool { return waitFor(p.exited, d) }

// Stop ends the process: see stop.
func (p *Process) Stop() { p.stop() }

// stdinWriter is the process's stdin as mcp-go writes to it: a write that
// wrote nothing is a *wire.UnwrittenError, which the policy knows did not
// run (a request sent after the process died is NotSent, not
// OutcomeUnknown).
type stdinWriter struct{ p *Process }

func (w stdinWriter) Write(b []byte) (int, error) {
	n, err := w.p.stdin.Write(b)
	if err != nil && n == 0 {
		err = &wire.UnwrittenError{Err: err}
	}
	return n, err
}

// Close is mcp-go's Close of the session, which the client calls only to
// end the process (a session's close, a failed open), Stop following: it
// is the start of the stop, and the exit it causes is no crash. A server
// that exits at once on stdin's end (most do) would otherwise be reaped
// before Stop says so, and its exit taken for a crash: a lost session, a
// "server process exited" warning, ProcessExited{Stopped: false}, and,
// at Close, an outage that opens the breaker after the client is closed.
func (w stdinWriter) Close() error {
	w.p.stopping.Store(true)
	return w.p.stdin.Close()
}

// ExitError is the cause of the loss of a stdio server's session when its
// process exited, and of calls that failed fast while it was
// crash-looping: the exit, and its last stderr lines. Immutable.
type ExitError struct{ Exit observe.ProcessExit }

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("server process %d exited (%s) after %v", e.Exit.PID, e.Exit, e.Exit.Uptime.Round(time.Millisecond))
	if len(e.Exit.StderrTail) > 0 {
		msg += "; last stderr: " + strings.Join(e.Exit.StderrTail, " | ")
	}
	return msg
}

func exitOf(pid int, st *os.ProcessState, started, when time.Time, tail []string) observe.ProcessExit {
	e := observe.ProcessExit{PID: pid, Code: -1, When: when, Uptime: when.Sub(started), StderrTail: tail}
	if st == nil {
		return e
	}
	e.Code = st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal()
	}
	return e
}

// Stopping reports whether the client ended the process: its exit is no
// crash.
func (p *Process) Stopping() bool { return p.stopping.Load() }
