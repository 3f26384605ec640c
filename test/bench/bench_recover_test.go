package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/retry"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkRecoverAfterRestart measures the time from a restarted server
// accepting connections to the first call that succeeds on it, with the
// default backoff schedule, in each era:
//
//   - downtime=0: the server restarts at once (a new process on the same
//     port, which has forgotten every session); a call follows.
//   - downtime=150-450ms: a call is waiting when the server goes down; it
//     comes back after 150, 250, 350 or 450ms, so it lands at different
//     points of the reconnect loop's schedule.
//
// Metrics, means unless named worst:
//   - recover-ms, worst-recover-ms: server accepting → first successful call;
//   - step-ms: the backoff step under way when the server came back (0 if
//     none was);
//   - handshake-ms: what recovery took after the reconnect loop's first
//     attempt on the restarted server (or all of it, if no step was under
//     way): asking for the old session, the 404, initialize, the replayed
//     call. A loop that missed the server's return would
//     show here as another whole step;
//   - requests: HTTP requests the restarted server received until then;
//   - fresh-ms: what raw mcp-go pays for the least a client can do against
//     the same server just restarted: a new client, initialize, one call;
//   - x-fresh: handshake-ms / fresh-ms;
//   - raw-failed: the share of restarts after which raw mcp-go's next call
//     (on its old session) failed.
//
// So recovery costs the rest of one backoff step, then one reconnect of
// about x-fresh times what a brand-new client pays.
func BenchmarkRecoverAfterRestart(b *testing.B) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		for _, down := range []bool{false, true} {
			name := "era=" + era.String() + "/downtime=0"
			if down {
				name = "era=" + era.String() + "/downtime=150-450ms"
			}
			b.Run(name, func(b *testing.B) { benchRecover(b, era, down) })
		}
	}
}

func benchRecover(b *testing.B, era testserver.Era, down bool) {
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	steps := &stepLog{}
	c, err := client.New(srv.URL(), client.WithBackOff(steps.newBackOff))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	raw := rig.RawClient(b, srv.URL())
	req := rig.ToolRequest("echo", map[string]any{"text": "x"})
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.CallTool(ctx, req)
		return err
	}

	downtimes := []time.Duration{0}
	if down {
		downtimes = []time.Duration{150 * time.Millisecond, 250 * time.Millisecond, 350 * time.Millisecond, 450 * time.Millisecond}
	}
	var total, worst, stepTotal, handshakeTotal, freshTotal time.Duration
	var requests int64
	restarts, rawFailed := 0, 0
	for b.Loop() {
		for _, downtime := range downtimes {
			up, before, recovered := restartWhileCalling(b, srv, downtime, call)
			restarts++
			requests += srv.HTTPRequests("POST") - before
			d := recovered.Sub(up)
			step, fires := steps.underWay(up)
			handshake := d
			if step > 0 && fires.After(up) {
				handshake = recovered.Sub(fires)
			}
			total += d
			worst = max(worst, d)
			stepTotal += step
			handshakeTotal += handshake

			b.StopTimer()
			if _, err := raw.CallTool(context.Background(), req); err != nil {
				rawFailed++
			}
			// The reference meets a just-restarted server too: first
			// requests to a new server process cost more than later ones.
			if err := srv.Restart(); err != nil {
				b.Fatal(err)
			}
			freshTotal += freshCall(b, srv.URL(), req)
			b.StartTimer()
		}
	}
	n := time.Duration(restarts)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(total/n), "recover-ms")
	b.ReportMetric(ms(worst), "worst-recover-ms")
	b.ReportMetric(ms(stepTotal/n), "step-ms")
	b.ReportMetric(ms(handshakeTotal/n), "handshake-ms")
	b.ReportMetric(float64(requests)/float64(restarts), "requests")
	b.ReportMetric(ms(freshTotal/n), "fresh-ms")
	b.ReportMetric(float64(handshakeTotal)/float64(freshTotal), "x-fresh")
	b.ReportMetric(float64(rawFailed)/float64(restarts), "raw-failed")
}

// restartWhileCalling restarts srv: at once if downtime is 0, followed by a
// call; otherwise with a call already waiting when it stops. It returns when
// the server accepted connections again, how many POSTs it had seen by then,
// and when the call succeeded.
func restartWhileCalling(b *testing.B, srv *testserver.Server, downtime time.Duration, call func() error) (up time.Time, before int64, recovered time.Time) {
	if downtime == 0 {
		if err := srv.Restart(); err != nil {
			b.Fatal(err)
		}
		up, before = time.Now(), srv.HTTPRequests("POST")
		if err := call(); err != nil {
			b.Fatal(err)
		}
		return up, before, time.Now()
	}
	srv.Stop()
	done := make(chan time.Time, 1)
	go func() {
		if err := call(); err != nil {
			b.Error(err)
		}
		done <- time.Now()
	}()
	time.Sleep(downtime)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	up, before = time.Now(), srv.HTTPRequests("POST")
	return up, before, <-done
}

// freshCall times a new raw mcp-go client's start, initialize and one
// call, its transport made with opts.
func freshCall(b *testing.B, url string, req mcp.CallToolRequest, opts ...transport.StreamableHTTPCOption) time.Duration {
	start := time.Now()
	c, err := mcpclient.NewStreamableHttpClient(url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// stepLog records every pause the client's backoff schedules hand out, and
// when, so that the step under way at any moment can be found afterwards.
type stepLog struct {
	mu    sync.Mutex
	steps []loggedStep
}

type loggedStep struct {
	at    time.Time
	pause time.Duration
}

func (l *stepLog) newBackOff() backoff.BackOff {
	return &loggingBackOff{BackOff: retry.DefaultBackOff(), log: l}
}

// underWay returns the last pause handed out at or before t, and when it
// ended; zero if none was.
func (l *stepLog) underWay(t time.Time) (time.Duration, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.steps) - 1; i >= 0; i-- {
		if s := l.steps[i]; !s.at.After(t) {
			return s.pause, s.at.Add(s.pause)
		}
	}
	return 0, time.Time{}
}

type loggingBackOff struct {
	backoff.BackOff
	log *stepLog
}

func (b *loggingBackOff) NextBackOff() time.Duration {
	d := b.BackOff.NextBackOff()
	b.log.mu.Lock()
	b.log.steps = append(b.log.steps, loggedStep{at: time.Now(), pause: d})
	b.log.mu.Unlock()
	return d
}
