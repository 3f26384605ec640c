// Package everything runs the TypeScript reference MCP server,
// @modelcontextprotocol/server-everything, pinned by this directory's
// package-lock.json, as a node child process on 127.0.0.1, for the tests
// that hold the client to servers nobody here wrote. The test controls it by
// PID, with real signals: SIGTERM, SIGKILL, SIGSTOP and SIGCONT.
//
// Install it with: npm ci --prefix test/internal/everything
package everything

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// Version is the pinned version of server-everything (package.json).
const Version = "2026.8.31"

// Bounds on a start: node loads the server in well under a second; a port
// taken by another process between our pick and node's listen makes node
// exit, and the start is tried again.
const (
	readyWait     = 15 * time.Second
	exitWait      = 5 * time.Second
	startAttempts = 5
)

// dir is this package's directory, where package.json and node_modules are.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func entry() string {
	return filepath.Join(dir(), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// Installed returns nil if node and the pinned server are there, else an
// error saying what is missing and how to install it.
func Installed() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not installed (apt-get install nodejs npm), then: npm ci --prefix test/internal/everything")
	}
	if _, err := os.Stat(entry()); err != nil {
		return fmt.Errorf("server-everything %s is not installed: npm ci --prefix test/internal/everything", Version)
	}
	return nil
}

// Server is one server-everything, started again on the same port after
// every stop. It is not safe for concurrent use: one test drives it.
type Server struct {
	port    int
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
}

// Start runs server-everything's Streamable HTTP transport on a free port
// of 127.0.0.1, logging its output to a file in logDir, and returns once it
// accepts connections.
func Start(logDir string) (*Server, error) {
	if err := Installed(); err != nil {
		return nil, err
	}
	s := &Server{logPath: filepath.Join(logDir, "server-everything.log")}
	var err error
	for range startAttempts {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// URL is the MCP endpoint, "http://127.0.0.1:PORT/mcp".
func (s *Server) URL() string { return "http://" + s.Addr() + "/mcp" }

// Addr is "127.0.0.1:PORT"; it stays the same across restarts.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// PID is the process id of the running server.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// LogPath is the file the server's output goes to.
func (s *Server) LogPath() string { return s.logPath }

// Restart sends sig to the process, waits for it to exit (SIGKILL after
// exitWait), and starts a new one on the same port. server-everything has
// no SIGTERM handler (it handles SIGINT only), so SIGTERM ends it at once,
// as node's default does; the kernel closes its sockets either way.
func (s *Server) Restart(sig syscall.Signal) error {
	s.kill(sig)
	var err error
	for range startAttempts {
		if err = s.start(); err == nil {
			return nil
		}
	}
	return err
}

// Stop sends SIGSTOP: the process is frozen, the kernel still accepts
// connections to its port and buffers their bytes.
func (s *Server) Stop() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Cont sends SIGCONT: the frozen process goes on.
func (s *Server) Cont() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Close kills the process and waits for it.
func (s *Server) Close() { s.kill(syscall.SIGKILL) }

func (s *Server) kill(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	// A stopped process does not act on SIGTERM until it is continued.
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-s.exited:
	case <-time.After(exitWait):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

func (s *Server) start() error {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.Command("node", "--require", filepath.Join(dir(), "loopback.cjs"), entry(), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(s.port))
	// Files, not pipes: exec starts no copying goroutine, and the log
	// survives the test for a look after a failure.
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("everything: start node: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(readyWait)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("everything: node exited before listening on %s (see %s)", s.Addr(), s.logPath)
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill(syscall.SIGKILL)
	return errors.New("everything: node did not listen on " + s.Addr() + " in time (see " + s.logPath + ")")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StdioCommand is the command that runs server-everything over stdio, on
// the pinned package (not npx), for a stdio client: node and its arguments.
func StdioCommand() (string, []string) {
	return "node", []string{entry(), "stdio"}
}

// SSECommand is the command that runs server-everything's HTTP+SSE
// transport (protocol 2024-11-05: GET /sse, POST /message?sessionId=…) on
// port of 127.0.0.1, on the pinned package; the caller starts and ends it.
func SSECommand(port int) *exec.Cmd {
	cmd := exec.Command("node", "--require", filepath.Join(dir(), "loopback.cjs"), entry(), "sse")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	return cmd
}

// LoopbackPreload is the file to give node's --require so that a server
// given a port alone listens on 127.0.0.1 (loopback.cjs), for the other
// node servers of the tests.
func LoopbackPreload() string { return filepath.Join(dir(), "loopback.cjs") }
