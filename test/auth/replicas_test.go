package auth

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/resilientmcp/resilientmcp/auth"
	"github.com/resilientmcp/resilientmcp/auth/redisstore"
	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// A replica is this test binary run again as a child process with its own
// ResilientClient (WithOAuth, dynamic registration, a shared Store),
// against the parent's loopback authorization server and MCP server. Its
// environment says what to do; on stdin it reads "phase NAME" lines (its
// counters are kept per phase) and stops at EOF; on stdout it says
// "replica ready" after its first successful call, "replica authorizing"
// when the user is asked, then one "replica phase ..." line per phase and
// "replica totals ...".
const (
	replicaEnv          = "RESILIENTMCP_REPLICA" // set: this process is a replica
	replicaURLEnv       = "RESILIENTMCP_REPLICA_URL"
	replicaStoreEnv     = "RESILIENTMCP_REPLICA_STORE" // file:<dir> or redis:<addr>
	replicaLeaseEnv     = "RESILIENTMCP_REPLICA_LEASE"
	replicaCallersEnv   = "RESILIENTMCP_REPLICA_CALLERS"   // goroutines calling echo; 0: one call, then wait for EOF
	replicaDeadlineEnv  = "RESILIENTMCP_REPLICA_DEADLINE"  // each call's
	replicaAuthorizeEnv = "RESILIENTMCP_REPLICA_AUTHORIZE" // "hang": the user never answers
)

// TestHelperReplica is not a test: it is a replica when a test of this
// file runs the binary again with replicaEnv set.
func TestHelperReplica(t *testing.T) {
	if os.Getenv(replicaEnv) == "" {
		t.Skip("a replica process of the multi-process OAuth tests")
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf("replica "+format+"\n", args...)
	}
	var asked atomic.Int64
	authorize := func(ctx context.Context, authURL string) (string, error) {
		asked.Add(1)
		say("authorizing")
		if os.Getenv(replicaAuthorizeEnv) == "hang" {
			<-ctx.Done() // killed while it holds the lock
			return "", ctx.Err()
		}
		return authserver.Approve(ctx, authURL)
	}
	takeovers := &messageCounter{match: "took over"}
	var store auth.Store
	switch kind, where, _ := strings.Cut(os.Getenv(replicaStoreEnv), ":"); kind {
	case "file":
		var err error
		if store, err = auth.NewFileStore(where); err != nil {
			t.Fatal(err)
		}
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: where, MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
		defer rdb.Close()
		lease, _ := time.ParseDuration(os.Getenv(replicaLeaseEnv))
		store = redisstore.New(rdb, redisstore.WithLease(lease), redisstore.WithLogger(slog.New(takeovers)))
	default:
		t.Fatalf("%s=%q", replicaStoreEnv, os.Getenv(replicaStoreEnv))
	}
	c, err := client.New(os.Getenv(replicaURLEnv), client.WithOAuth(client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:8976/callback", Authorize: authorize, Store: store,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	deadline, _ := time.ParseDuration(os.Getenv(replicaDeadlineEnv))
	callers, _ := strconv.Atoi(os.Getenv(replicaCallersEnv))
	var mu sync.Mutex
	phase, phases := "start", []string{"start"}
	type counts struct{ calls, failed, notUnavailable int64 }
	byPhase := map[string]*counts{"start": {}}
	var firstErr string
	var ready sync.Once
	call := func(g, i int) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		text := fmt.Sprintf("r%d-g%d-%d", os.Getpid(), g, i)
		got, err := rig.CallTool(ctx, c, "echo", map[string]any{"text": text})
		mu.Lock()
		defer mu.Unlock()
		n := byPhase[phase]
		n.calls++
		if err != nil || got != text {
			n.failed++
			if !errors.Is(err, client.ErrUnavailable) {
				n.notUnavailable++
			}
			if firstErr == "" {
				firstErr = strings.ReplaceAll(fmt.Sprintf("%s: %q, %v", phase, got, err), "\n", " ")
			}
			return
		}
		ready.Do(func() { say("ready") })
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	if callers == 0 {
		call(0, 0)
	}
	for g := range callers {
		wg.Go(func() {
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				call(g, i)
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		if p, ok := strings.CutPrefix(lines.Text(), "phase "); ok {
			mu.Lock()
			phase = p
			phases = append(phases, p)
			byPhase[p] = &counts{}
			mu.Unlock()
		}
	}
	close(stop)
	wg.Wait()
	for _, p := range phases {
		n := byPhase[p]
		say("phase %s calls=%d failed=%d notunavailable=%d", p, n.calls, n.failed, n.notUnavailable)
	}
	st := c.Stats()
	say("totals asked=%d takeovers=%d refreshes=%d authorizations=%d firsterr=%s", asked.Load(), takeovers.n.Load(), st.TokenRefreshes, st.Authorizations, firstErr)
}

// messageCounter is a slog handler that counts the records whose message
// holds match.
type messageCounter struct {
	match string
	n     atomic.Int64
}

func (h *messageCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *messageCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.n.Add(1)
	}
	return nil
}
func (h *messageCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *messageCounter) WithGroup(string) slog.Handler      { return h }

// replica is a running replica process, seen from the parent.
type replica struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, closed at EOF
	done  chan struct{}
}

type replicaReport struct {
	phases                                      map[string][3]int64 // calls, failed, failed with other than ErrUnavailable
	asked, takeovers, refreshes, authorizations int64
	firstErr                                    string
}

// startReplica runs a replica with env (the keys above without the
// RESILIENTMCP_REPLICA_ prefix: "URL", "STORE", ...). It is killed, if
// still running, when the test ends.
func startReplica(t *testing.T, env map[string]string) *replica {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReplica$", "-test.count=1")
	cmd.Env = append(os.Environ(), replicaEnv+"=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, replicaEnv+"_"+k+"="+v)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(r.lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if l, ok := strings.CutPrefix(s.Text(), "replica "); ok {
				r.lines <- l
			}
		}
	}()
	go func() {
		defer close(r.done)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.done
	})
	return r
}

// waitFor waits (at most d) for a line that starts with prefix.
func (r *replica) waitFor(prefix string, d time.Duration) bool {
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				return false
			}
			if strings.HasPrefix(l, prefix) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

func (r *replica) phase(name string) {
	if _, err := fmt.Fprintf(r.stdin, "phase %s\n", name); err != nil {
		r.t.Errorf("replica %d: %v", r.cmd.Process.Pid, err)
	}
}

// kill ends the replica with SIGKILL.
func (r *replica) kill() {
	_ = r.cmd.Process.Kill()
	<-r.done
}

// finish closes stdin and reads the replica's report (waiting at most 30 s).
func (r *replica) finish() replicaReport {
	r.t.Helper()
	r.stdin.Close()
	rep := replicaReport{phases: map[string][3]int64{}}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				r.t.Errorf("replica %d ended without its totals", r.cmd.Process.Pid)
				return rep
			}
			if p, ok := strings.CutPrefix(l, "phase "); ok {
				var name string
				var n [3]int64
				fmt.Sscanf(p, "%s calls=%d failed=%d notunavailable=%d", &name, &n[0], &n[1], &n[2])
				rep.phases[name] = n
			}
			if p, ok := strings.CutPrefix(l, "totals "); ok {
				p, rep.firstErr, _ = strings.Cut(p, " firsterr=")
				fmt.Sscanf(p, "asked=%d takeovers=%d refreshes=%d authorizations=%d", &rep.asked, &rep.takeovers, &rep.refreshes, &rep.authorizations)
				<-r.done
				return rep
			}
		case <-timeout:
			r.t.Errorf("replica %d did not report within 30s", r.cmd.Process.Pid)
			return rep
		}
	}
}
