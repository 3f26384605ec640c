// Package lb is the load-balancer rig of the end-to-end tests: a real
// HAProxy, started by PID with a generated configuration, terminating TLS
// with a throwaway CA's certificate (internal/testcert; ALPN h2,http/1.1)
// in front of replicas of the test server, each a process of its own (the
// test binary run again), which can be restarted with SIGTERM and a drain,
// or killed with SIGKILL.
//
// It imports nothing of the client: the tests bring the client.
package lb

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"
)

// Binary is where Debian's haproxy package installs HAProxy.
const Binary = "/usr/sbin/haproxy"

// Affinity is how the load balancer keeps a session on a replica.
type Affinity int

const (
	// StickyHeader keeps a session on the replica that answered its
	// initialize, by the Mcp-Session-Id header: a stick table learns it
	// from the response and matches it on every request.
	StickyHeader Affinity = iota
	// StickyCookie keeps a client on a replica by a cookie the load
	// balancer inserts (cookie SRV insert indirect nocache), as AWS ALB
	// stickiness and nginx's sticky cookie do.
	StickyCookie
	// RoundRobin has no affinity: every request goes to the next replica.
	RoundRobin
)

// String names the affinity as the tests' subtests do.
func (a Affinity) String() string {
	return [...]string{"sticky-header", "sticky-cookie", "round-robin"}[a]
}

// HealthPath is the path of the replicas' health check.
const HealthPath = "/healthz"

// Health checks: every 200ms, a replica is out after 2 failures and back
// after 2 successes. Production checks are slower (2s); these keep the
// tests short, and every figure the tests assert is relative to them.
const (
	checkInterval = 200 * time.Millisecond
	checkFall     = 2
)

// RemovalDelay is how long the load balancer takes at most to take a dead
// replica out of rotation: the failed checks it waits for, and one more.
const RemovalDelay = (checkFall + 1) * checkInterval

// The h2 frontend's stream limit is raised from HAProxy's 100 to 1000.
// HAProxy counts a stream against MAX_CONCURRENT_STREAMS until its
// backend side lets go of it, after the client has read the answer and
// freed the stream on its side; on a loaded two-core machine (CI runs the
// test packages side by side) that lag is the likeliest cause of the bursts
// of refused new streams seen there (REFUSED_STREAM on ten consecutive
// stream ids, to a client with about 20 in flight). The clients never
// have more than a few dozen in flight, so the raised limit only takes the
// lag out of the count.
var configTemplate = template.Must(template.New("haproxy").Parse(`global
	maxconn 4096
	nbthread 2
	tune.h2.max-concurrent-streams 1000
	stats socket {{.Socket}} mode 600 level admin

defaults
	mode http
	timeout connect 1s
	timeout client 60s
	timeout server 60s
	timeout http-request 10s
	timeout http-keep-alive 60s
	retries 3
	option redispatch
	default-server check inter {{.Inter}} fall {{.Fall}} rise 2

frontend mcp
	bind 127.0.0.1:{{.Port}} ssl crt {{.PEM}} alpn h2,http/1.1
	default_backend replicas

backend replicas
	balance roundrobin
	option httpchk GET {{.Health}}
{{- if eq .Affinity "sticky-header"}}
	stick-table type string len 64 size 100k expire 30m
	stick on req.hdr(mcp-session-id)
	stick store-response res.hdr(mcp-session-id)
{{- else if eq .Affinity "sticky-cookie"}}
	cookie SRV insert indirect nocache
{{- end}}
{{- range .Servers}}
	server {{.Name}} {{.Addr}}{{if eq $.Affinity "sticky-cookie"}} cookie {{.Name}}{{end}}
{{- end}}
`))

// Server is one replica as the load balancer's configuration names it.
type Server struct{ Name, Addr string }

// HAProxy is a running haproxy process. Its methods are safe for
// concurrent use.
type HAProxy struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	port   int
	socket string
	dir    string // the short directory the stats socket lives in
}

// Start writes a configuration for servers with affinity into dir and
// starts haproxy on a free 127.0.0.1 port, TLS with the certificate,
// chain and key in pemFile (testcert.CA.WritePEM). It
// returns once every server passed its health checks, or an error.
func Start(dir, pemFile string, affinity Affinity, servers []Server) (*HAProxy, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	// A unix socket's path is limited to about 100 bytes: a test's
	// TempDir can be longer.
	sockDir, err := os.MkdirTemp("", "lb")
	if err != nil {
		return nil, err
	}
	h := &HAProxy{port: port, socket: filepath.Join(sockDir, "admin.sock"), dir: sockDir, done: make(chan struct{})}
	var cfg strings.Builder
	err = configTemplate.Execute(&cfg, map[string]any{
		"Socket": h.socket, "Port": port, "PEM": pemFile, "Health": HealthPath,
		"Inter": checkInterval.String(), "Fall": checkFall,
		"Affinity": affinity.String(), "Servers": servers,
	})
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	// -db: in the foreground, so that the process is the one started; -q:
	// its warnings (a server going down) are what the test provokes.
	h.cmd = exec.Command(Binary, "-db", "-q", "-f", file)
	h.cmd.Stdout, h.cmd.Stderr = os.Stderr, os.Stderr
	if err := h.cmd.Start(); err != nil {
		_ = os.RemoveAll(sockDir)
		return nil, fmt.Errorf("lb: starting haproxy: %w", err)
	}
	go func() {
		_ = h.cmd.Wait()
		close(h.done)
	}()
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	if err := h.WaitState(names, true, 15*time.Second); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// URL is the MCP endpoint through the load balancer.
func (h *HAProxy) URL() string { return fmt.Sprintf("https://127.0.0.1:%d/mcp", h.port) }

// PID is the haproxy process's.
func (h *HAProxy) PID() int { return h.cmd.Process.Pid }

// Stop ends haproxy and waits for it to exit.
func (h *HAProxy) Stop() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
	_ = os.RemoveAll(h.dir)
}

// Up reports, by server name, whether haproxy has the server in rotation
// (its checks pass), as its stats socket says.
func (h *HAProxy) Up() (map[string]bool, error) {
	conn, err := net.DialTimeout("unix", h.socket, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("show stat\n")); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(conn)
	status, name := -1, -1
	up := map[string]bool{}
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if head, ok := strings.CutPrefix(fields[0], "# "); ok {
			fields[0] = head
			status, name = slices.Index(fields, "status"), slices.Index(fields, "svname")
			continue
		}
		if status < 0 || len(fields) <= status || fields[0] != "replicas" {
			continue
		}
		switch fields[name] {
		case "FRONTEND", "BACKEND":
			continue
		}
		up[fields[name]] = strings.HasPrefix(fields[status], "UP")
	}
	if status < 0 {
		return nil, errors.New("lb: haproxy's stats have no status column")
	}
	return up, sc.Err()
}

// WaitState waits up to limit for every server in names to be in rotation
// (up) or out of it.
func (h *HAProxy) WaitState(names []string, up bool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last map[string]bool
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-h.done:
			return errors.New("lb: haproxy exited")
		default:
		}
		if last, err = h.Up(); err == nil {
			all := true
			for _, n := range names {
				if s, ok := last[n]; !ok || s != up {
					all = false
				}
			}
			if all {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("lb: servers %v not up=%v within %v: states %v, last error %v", names, up, limit, last, err)
}

// FreePort is a 127.0.0.1 port nothing listened on a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
