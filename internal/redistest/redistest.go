// Package redistest runs a real redis-server (Debian's package) for a
// test: on a free 127.0.0.1 port, started and stopped by PID, fresh for
// each test that asks. Where redis-server is not installed the test is
// skipped with a message saying how to install it. Run is the same for an
// example, which has no test to skip.
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is one redis-server process. It is safe for concurrent use.
type Server struct {
	t    testing.TB // nil: started by Run
	args []string
	dir  string // Run's, removed by Close

	addr string

	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan error // the running process's Wait
}

// Start runs redis-server on a free port of 127.0.0.1 until the test
// ends. With persist, it keeps its data across Stop and Start (an append
// only file, fsynced on every write, in the test's temporary directory),
// as a Redis that holds credentials should; without, it forgets them.
func Start(t testing.TB, persist bool) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server); skipping the Redis test")
	}
	s, err := newServer(bin, t.TempDir(), persist)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// ErrNotInstalled is Run's error where redis-server is not installed.
var ErrNotInstalled = errors.New("redistest: redis-server is not installed (Debian: apt-get install redis-server)")

// Run is Start for an example: the server runs, in a temporary directory
// of its own, until Close.
func Run(persist bool) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		return nil, err
	}
	s, err := newServer(bin, dir, persist)
	if err == nil {
		s.dir = dir
		err = s.start()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Close stops a server started by Run and removes its directory.
func (s *Server) Close() {
	s.Stop()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func newServer(bin, dir string, persist bool) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	args := []string{bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}
	if persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return &Server{args: args, addr: addr}, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return s.addr }

// PID is the running process's id, 0 if stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop kills the process (SIGKILL) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts it again on the same port. It fails the test (panics,
// for a server started by Run) if it cannot.
func (s *Server) Restart() {
	if s.t == nil {
		if err := s.start(); err != nil {
			panic(err)
		}
		return
	}
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	var last error
	for range 20 { // the port may still be closing after a kill
		cmd := exec.Command(s.args[0], s.args[1:]...)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("redistest: %w", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		last = waitReady(s.addr, exited)
		if last == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		_ = cmd.Process.Kill()
		<-exited
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redistest: redis-server did not start on %s: %w", s.addr, last)
}

// waitReady waits (at most 5 s) until the server answers PING with PONG,
// or its process exits.
func waitReady(addr string, exited <-chan error) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 16)
			n, _ := c.Read(buf)
			c.Close()
			if strings.HasPrefix(string(buf[:n]), "+PONG") {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PONG from %s in 5s", addr)
}
