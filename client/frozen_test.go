package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/resilientmcp/resilientmcp/internal/faultproxy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func frozenProber() Option { return optionFunc(func(o *options) { o.frozenProber = true }) }

// generousProbeTimeout bounds a probe of the tests with short keepalive
// intervals far above a round trip on a loaded machine (CI, -race): the
// default, half the interval, is 20ms for a 40ms interval, and a probe
// that times out is a session that does not answer, not the fault the
// test provoked. The call's own deadline still bounds the test.
var generousProbeTimeout = WithKeepAliveTimeout(10 * time.Second)

// F17: the process was frozen past the keepalive interval, so the prober
// never ran; meanwhile a middlebox forgot the connection, or the server
// restarted and forgot the session. The first call after the thaw probes
// first, and succeeds, for a non-idempotent tool too, which runs once.
func TestF17FrozenProcessValidatesBeforeUse(t *testing.T) {
	for name, fault := range map[string]func(*testserver.Server, *faultproxy.Proxy) error{
		"connection silently dropped": func(_ *testserver.Server, p *faultproxy.Proxy) error { p.DropAll(); return nil },
		"server restarted":            func(s *testserver.Server, _ *faultproxy.Proxy) error { return s.Restart() },
	} {
		t.Run(name, func(t *testing.T) {
			srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			proxy, err := faultproxy.New(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			c, err := New(proxy.URL("/mcp"), WithKeepAlive(40*time.Millisecond), generousProbeTimeout, frozenProber())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "increment"
			for i := range 20 {
				if err := fault(srv, proxy); err != nil {
					t.Fatal(err)
				}
				time.Sleep(60 * time.Millisecond)
				before := srv.ToolRuns("increment")
				if _, err := c.CallTool(ctx, req); err != nil {
					t.Fatalf("call %d after the freeze: %v", i, err)
				}
				if ran := srv.ToolRuns("increment") - before; ran != 1 {
					t.Fatalf("call %d: increment ran %d times, want 1", i, ran)
				}
			}
			s := c.Stats()
			t.Logf("stats %+v", s)
			if s.Probes < 20 {
				t.Errorf("%d probes for 20 calls after idling past the interval, want one each", s.Probes)
			}
			if name == "server restarted" && s.Reinitializations != 20 {
				t.Errorf("%d re-initializations for 20 restarts", s.Reinitializations)
			}
		})
	}
}

// The hidden option really does freeze the prober: without calls, nothing
// is probed.
func TestFrozenProberSendsNothing(t *testing.T) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.StatelessEra})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := New(srv.URL(), WithKeepAlive(10*time.Millisecond), frozenProber())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if p := c.Stats().Probes; p != 0 {
		t.Fatalf("%d probes with the prober frozen", p)
	}
	if err := c.Ping(context.Background()); err != nil || errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}
