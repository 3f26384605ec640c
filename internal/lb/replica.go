package lb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// The environment a replica process is started with: its address, its
// era ("session" or "stateless") and the directory it writes the markers
// of its tool executions into.
const (
	ReplicaAddrEnv    = "RESILIENTMCP_LB_REPLICA"
	ReplicaEraEnv     = "RESILIENTMCP_LB_REPLICA_ERA"
	ReplicaMarkersEnv = "RESILIENTMCP_LB_REPLICA_MARKERS"
)

// Drain is how long a replica lets requests in flight finish after
// SIGTERM before it stops hard.
const Drain = 2 * time.Second

const readyLine = "lb-replica ready"

// Replica is the parent's handle on one replica process, which it can
// start, stop and start again on the same address. Its methods are safe for
// concurrent use.
type Replica struct {
	Server
	command []string // the test binary and the arguments that make it a replica
	env     []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	stdin io.WriteCloser // held open: the replica ends when it closes
	done  chan struct{}  // closed when the process has exited
}

// NewReplica is a replica named name on a free port, run as command (the
// test binary and its arguments) with the environment of era and markers
// added to this process's.
func NewReplica(name string, command []string, stateless bool, markers string) (*Replica, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	era := "session"
	if stateless {
		era = "stateless"
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return &Replica{
		Server:  Server{Name: name, Addr: addr},
		command: command,
		env:     append(os.Environ(), ReplicaAddrEnv+"="+addr, ReplicaEraEnv+"="+era, ReplicaMarkersEnv+"="+markers),
	}, nil
}

// Start starts the process and returns once it serves.
func (r *Replica) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return errors.New("lb: replica " + r.Name + " is running")
	}
	cmd := exec.Command(r.command[0], r.command[1:]...)
	cmd.Env = r.env
	cmd.Stderr = os.Stderr
	// Its stdin is a pipe the replica watches: if this process dies, the
	// replica ends too.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		var once sync.Once
		for sc.Scan() {
			if sc.Text() == readyLine {
				once.Do(func() { close(ready) })
			}
		}
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-ready:
	case <-done:
		return fmt.Errorf("lb: replica %s exited before serving", r.Name)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("lb: replica %s did not serve within 30s", r.Name)
	}
	r.cmd, r.stdin, r.done = cmd, stdin, done
	return nil
}

// Close ends the replica if it runs, at once, without a drain.
func (r *Replica) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
}

// Term sends SIGTERM and waits for the replica to drain and exit.
func (r *Replica) Term() error { return r.stop(syscall.SIGTERM) }

// Kill sends SIGKILL and waits for the process to be gone.
func (r *Replica) Kill() error { return r.stop(syscall.SIGKILL) }

func (r *Replica) stop(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return nil
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-r.done:
	case <-time.After(Drain + 10*time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	_ = r.stdin.Close()
	r.cmd = nil
	return nil
}

// ServeReplica is the replica process: it serves the test server on the
// address its environment names until SIGTERM (then drains for Drain) or
// until its stdin closes, and writes a marker line for every tool call
// whose arguments carry an "id". It prints readyLine once it serves.
func ServeReplica() error {
	addr, dir := os.Getenv(ReplicaAddrEnv), os.Getenv(ReplicaMarkersEnv)
	cfg := testserver.Config{Era: testserver.SessionEra}
	if os.Getenv(ReplicaEraEnv) == "stateless" {
		cfg.Era = testserver.StatelessEra
	}
	markers, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s-%d.markers", strings.ReplaceAll(addr, ":", "_"), os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer markers.Close()
	var mu sync.Mutex
	cfg.ToolRan = func(tool string, args map[string]any) {
		id, ok := args["id"].(string)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// One write per line, straight to the file: a SIGKILL loses
		// nothing written before it.
		_, _ = markers.WriteString(tool + "\t" + id + "\n")
	}
	var draining atomic.Bool
	cfg.Guard = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != HealthPath {
				next.ServeHTTP(w, r)
				return
			}
			if draining.Load() {
				http.Error(w, "draining", http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM)
	srv, err := testserver.StartAt(addr, cfg)
	if err != nil {
		return err
	}
	fmt.Println(readyLine)
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-signals:
		draining.Store(true)
		srv.Shutdown(Drain)
	case <-stdinClosed:
	}
	srv.Close()
	return nil
}

// Runs counts the markers every replica process wrote into dir: how many
// times each tool call with that id ran, across the replicas.
func Runs(dir string) (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.markers"))
	if err != nil {
		return nil, err
	}
	runs := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			if _, id, ok := strings.Cut(line, "\t"); ok {
				runs[id]++
			}
		}
	}
	return runs, nil
}
