package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/internal/testcert"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// h2Rig is the test server over TLS (HTTP/2 by ALPN) behind an h2front,
// and a client of the front that trusts the rig's private CA.
type h2Rig struct {
	srv   *testserver.Server
	front *h2front
	c     *ResilientClient
	ctx   context.Context
}

func newH2Rig(t *testing.T, era testserver.Era, opts ...Option) *h2Rig {
	t.Helper()
	ca, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := testserver.Start(testserver.Config{Era: era, TLS: ca.ServerConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	front := newH2Front(t, ca, srv.Addr())
	opts = append([]Option{WithTLSConfig(ca.ClientConfig()), WithKeepAlive(0)}, opts...)
	c, err := New(front.url(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return &h2Rig{srv: srv, front: front, c: c, ctx: ctx}
}

func (r *h2Rig) call(name string, args map[string]any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	_, err := r.c.CallTool(r.ctx, req)
	return err
}

// A proxy answers with RST_STREAM REFUSED_STREAM a request it had
// forwarded, which ran (HAProxy, when the replica it sent the stream to
// dies). Go's HTTP/2 transport would send it again by itself; the client
// must decide instead: the unannotated tool runs once and its caller is
// told the outcome is unknown; a read-only one is replayed, by the client.
// Over h2, asserted.
func TestRefusedStreamIsNeverResentByTheTransport(t *testing.T) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		t.Run(era.String(), func(t *testing.T) {
			r := newH2Rig(t, era)
			if err := r.call("echo", map[string]any{"text": "warm"}); err != nil {
				t.Fatal(err)
			}

			r.front.refuseNext.Store(1)
			err := r.call("increment", nil)
			if got := r.front.refused.Load(); got != 1 {
				t.Fatalf("the front refused %d streams, want 1: nothing was tested", got)
			}
			if runs := r.srv.ToolRuns("increment"); runs != 1 {
				t.Errorf("increment ran %d times, want once: the refused stream was sent again", runs)
			}
			if !errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("increment on a refused stream = %v; want ErrOutcomeUnknown", err)
			}
			t.Logf("caller saw: %v", err)

			echoes := r.srv.ToolRuns("echo")
			r.front.refuseNext.Store(1)
			if err := r.call("echo", map[string]any{"text": "again"}); err != nil {
				t.Errorf("read-only echo on a refused stream: %v; want it replayed", err)
			}
			if runs := r.srv.ToolRuns("echo") - echoes; runs != 2 {
				t.Errorf("echo ran %d times, want 2: refused once, replayed once", runs)
			}
			if err := r.front.allH2(); err != nil {
				t.Errorf("%v: %v", err, r.front.negotiated())
			}
		})
	}
}

// A graceful GOAWAY leaves the streams above its last stream id
// unprocessed (RFC 9113 6.8), whoever sent it: not sent, so even the
// unannotated tool is sent again, by the client, on a new connection, and
// runs once.
func TestGoAwayUnprocessedStreamIsSentAgain(t *testing.T) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		t.Run(era.String(), func(t *testing.T) {
			r := newH2Rig(t, era)
			accepted := r.front.accepted.Load()
			r.front.goAwayNext.Store(1)
			if err := r.call("increment", nil); err != nil {
				t.Errorf("increment turned away by GOAWAY: %v; want it sent again", err)
			}
			if got := r.front.goneAway.Load(); got != 1 {
				t.Fatalf("the front sent %d GOAWAYs, want 1: nothing was tested", got)
			}
			if runs := r.srv.ToolRuns("increment"); runs != 1 {
				t.Errorf("increment ran %d times, want once", runs)
			}
			if r.front.accepted.Load() == accepted {
				t.Error("no new connection after the GOAWAY")
			}
			if err := r.front.allH2(); err != nil {
				t.Errorf("%v: %v", err, r.front.negotiated())
			}
		})
	}
}

// One HTTP/2 connection carries every call in flight: when it dies, they
// fail together, each classified as a connection lost under a sent
// request: unannotated calls end with ErrOutcomeUnknown and ran at most
// once, and the next call goes out on a new connection.
func TestDeadH2ConnectionFailsItsStreamsTogether(t *testing.T) {
	r := newH2Rig(t, testserver.StatelessEra)
	if err := r.call("echo", map[string]any{"text": "warm"}); err != nil {
		t.Fatal(err)
	}
	const calls = 4
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { errs[i] = r.call("slow", map[string]any{"ms": 5000}) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.srv.ToolRuns("slow") < calls && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := r.front.accepted.Load(); got != 1 {
		t.Fatalf("%d connections for the calls in flight, want them all on one", got)
	}
	r.front.dropAll()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("call %d on the dead connection: %v; want ErrOutcomeUnknown", i, err)
		}
	}
	if runs := r.srv.ToolRuns("slow"); runs != calls {
		t.Errorf("slow ran %d times for %d calls", runs, calls)
	}
	if err := r.call("echo", map[string]any{"text": "after"}); err != nil {
		t.Errorf("the call after: %v", err)
	}
	if err := r.front.allH2(); err != nil {
		t.Errorf("%v: %v", err, r.front.negotiated())
	}
}
