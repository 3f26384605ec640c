package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"go.uber.org/goleak"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

const (
	// idleClientsEnv sets BenchmarkIdleClients' number of clients of each
	// kind (default 1000), e.g. RESILIENTMCP_IDLE_CLIENTS=10000.
	idleClientsEnv = "RESILIENTMCP_IDLE_CLIENTS"
	// idleSharedEnv, if set, also measures ResilientClients that share one
	// http.Client, for the comparison in BENCHMARKS.md.
	idleSharedEnv = "RESILIENTMCP_IDLE_SHARED"
	// idleServerEnv makes the test binary the benchmark's server process;
	// its value is the era.
	idleServerEnv = "RESILIENTMCP_IDLE_SERVER"
)

// BenchmarkIdleClients measures what an idle client costs a process that
// holds many of them: N raw mcp-go clients, then N ResilientClients (keepalive
// on), all initialized against one endpoint and left idle, in the same run.
// The server runs in a process of its own (this test binary, re-executed), so
// nothing of it is counted.
//
// Reported per idle client, each kind from its own baseline after two GCs:
//   - heap-B, stack-B: live heap and goroutine stack bytes, all-in: the
//     client, its session, and the idle connections it keeps (raw mcp-go's
//     default http.Client shares at most 2 idle connections per host among
//     all clients; a ResilientClient keeps its own, at most one when idle);
//   - goroutines, conns: goroutines and open sockets (Linux; -1 elsewhere);
//   - init-us: one client made and initialized, alone, against a warm
//     server; raw mcp-go as users have it (its pooled connections shared
//     with every raw client), raw mcp-go with an http.Transport of its own
//     (it dials, as every ResilientClient does) and ResilientClient take
//     turns, on 100 fresh clients each;
//   - probe-peak/mean: the ResilientClients' keepalive probes in the
//     busiest 100ms window of the first two keepalive intervals, over the
//     mean of all windows: 1 is perfectly even, a herd is interval/100ms;
//     probe-steady-peak/mean: the same for the steadier of the two
//     intervals, which a one-off stall of either process does not reach;
//   - with RESILIENTMCP_IDLE_SHARED set, shared-...: ResilientClients that
//     share one http.Client instead of each having its own;
//
// and ratios to raw (x-raw-...). The keepalive interval is 2ms per client
// (2s for 1000), so that the probes are a steady 500 a second whatever N.
// After Close, not one goroutine may be left. One run of both eras takes
// about 12s at N=1000.
func BenchmarkIdleClients(b *testing.B) {
	n := 1000
	if v := os.Getenv(idleClientsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number", idleClientsEnv, v)
		}
	}
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		b.Run("era="+era.String(), func(b *testing.B) {
			for b.Loop() {
				benchIdleClients(b, era, n)
			}
		})
	}
}

func benchIdleClients(b *testing.B, era testserver.Era, n int) {
	leaks := goleak.IgnoreCurrent()
	url, stop := startServerProcess(b, era)
	defer stop()
	interval := time.Duration(n) * 2 * time.Millisecond

	var shared *http.Client
	if os.Getenv(idleSharedEnv) != "" {
		shared = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		shared.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	}
	rawInit, rawOwnInit, init, sharedInit := initTimes(b, url, 100, shared)

	openRaw := func(context.Context) (io.Closer, error) {
		c, err := mcpclient.NewStreamableHttpClient(url)
		if err != nil {
			return nil, err
		}
		if err := c.Start(context.Background()); err != nil {
			return nil, err
		}
		_, err = c.Initialize(context.Background(), rig.BenchInit())
		return c, err
	}
	raws, rawCost := openIdle(b, n, openRaw)
	closeAll(b, raws)
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	var rcs []*client.ResilientClient
	openResilient := func(ctx context.Context, opts ...client.Option) (io.Closer, error) {
		c, err := client.New(url, append(opts, client.WithKeepAlive(interval))...)
		if err != nil {
			return nil, err
		}
		_, err = c.Initialize(ctx, rig.BenchInit())
		return c, err
	}
	closers, cost := openIdle(b, n, func(ctx context.Context) (io.Closer, error) { return openResilient(ctx) })
	for _, c := range closers {
		rcs = append(rcs, c.(*client.ResilientClient))
	}
	spread, steadySpread := probeSpread(rcs, interval)
	// Measured again after the probes: what an idle client costs once its
	// keepalive has run, not only after its handshake.
	cost = measureIdle(b, n, cost.base)
	closeAll(b, closers)

	if shared != nil {
		sharedClosers, sharedCost := openIdle(b, n, func(ctx context.Context) (io.Closer, error) {
			return openResilient(ctx, client.WithHTTPClient(shared))
		})
		time.Sleep(interval * 2)
		sharedCost = measureIdle(b, n, sharedCost.base)
		closeAll(b, sharedClosers)
		shared.CloseIdleConnections()
		b.Logf("sharing one http.Client: %s, init %v", sharedCost, sharedInit)
		b.ReportMetric(float64(sharedInit)/float64(rawInit), "shared-x-raw-init")
		b.ReportMetric(sharedCost.heap, "shared-heap-B/client")
		b.ReportMetric(sharedCost.stack, "shared-stack-B/client")
		b.ReportMetric(sharedCost.goroutines, "shared-goroutines/client")
		b.ReportMetric(sharedCost.conns, "shared-conns/client")
	}

	if err := goleak.Find(leaks); err != nil {
		b.Errorf("after closing every client: %v", err)
	}
	b.Logf("%d clients; raw: %s, init %v (%v with a transport of its own)", n, rawCost, rawInit, rawOwnInit)
	b.Logf("%d clients; resilient: %s, init %v, probe peak/mean %.2f (%.2f in the steadier interval)", n, cost, init, spread, steadySpread)
	b.ReportMetric(cost.heap, "heap-B/client")
	b.ReportMetric(rawCost.heap, "raw-heap-B/client")
	b.ReportMetric(cost.heap/rawCost.heap, "x-raw-heap")
	b.ReportMetric(cost.stack, "stack-B/client")
	b.ReportMetric(rawCost.stack, "raw-stack-B/client")
	b.ReportMetric(cost.goroutines, "goroutines/client")
	b.ReportMetric(rawCost.goroutines, "raw-goroutines/client")
	b.ReportMetric(cost.conns, "conns/client")
	b.ReportMetric(rawCost.conns, "raw-conns/client")
	b.ReportMetric(float64(init.Microseconds()), "init-us")
	b.ReportMetric(float64(rawInit.Microseconds()), "raw-init-us")
	b.ReportMetric(float64(init)/float64(rawInit), "x-raw-init")
	b.ReportMetric(float64(rawOwnInit.Microseconds()), "raw-own-transport-init-us")
	b.ReportMetric(float64(init)/float64(rawOwnInit), "x-raw-own-transport-init")
	b.ReportMetric(spread, "probe-peak/mean")
	b.ReportMetric(steadySpread, "probe-steady-peak/mean")
}

// TestIdleServerProcess is not a test: it is BenchmarkIdleClients' server,
// when the benchmark runs this binary again with idleServerEnv set. It
// prints the server's URL and serves until its stdin is closed.
func TestIdleServerProcess(t *testing.T) {
	era := os.Getenv(idleServerEnv)
	if era == "" {
		t.Skip("the server process of BenchmarkIdleClients")
	}
	cfg := testserver.Config{Era: testserver.SessionEra}
	if era == testserver.StatelessEra.String() {
		cfg.Era = testserver.StatelessEra
	}
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fmt.Printf("idle-server-url %s\n", srv.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startServerProcess runs the server of era in a child process and returns
// its URL and a function that ends it.
func startServerProcess(b *testing.B, era testserver.Era) (string, func()) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleServerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), idleServerEnv+"="+era.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() {
		_ = stdin.Close()
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if url, ok := strings.CutPrefix(lines.Text(), "idle-server-url "); ok {
			return url, stop
		}
	}
	stop()
	b.Fatalf("the server process printed no URL: %v", lines.Err())
	return "", nil
}

// idleCost is what each of n idle clients adds to the process.
type idleCost struct {
	base                           footprint
	heap, stack, goroutines, conns float64
}

func (c idleCost) String() string {
	return fmt.Sprintf("%.0f B heap, %.0f B stack, %.2f goroutines, %.2f conns per client", c.heap, c.stack, c.goroutines, c.conns)
}

type footprint struct {
	heap, stack       uint64
	goroutines, socks int
}

func takeFootprint() footprint {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return footprint{heap: ms.HeapAlloc, stack: ms.StackInuse, goroutines: runtime.NumGoroutine(), socks: openSockets()}
}

// openSockets counts this process's sockets, or -1 where /proc is missing.
func openSockets() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:") {
			n++
		}
	}
	return n
}

func measureIdle(b *testing.B, n int, base footprint) idleCost {
	b.Helper()
	f := takeFootprint()
	per := func(after, before float64) float64 { return (after - before) / float64(n) }
	c := idleCost{
		base:       base,
		heap:       per(float64(f.heap), float64(base.heap)),
		stack:      per(float64(f.stack), float64(base.stack)),
		goroutines: per(float64(f.goroutines), float64(base.goroutines)),
		conns:      -1,
	}
	if f.socks >= 0 {
		c.conns = per(float64(f.socks), float64(base.socks))
	}
	return c
}

// openIdle opens n clients about at once (8 at a time), lets them settle,
// and measures them.
func openIdle(b *testing.B, n int, open func(context.Context) (io.Closer, error)) ([]io.Closer, idleCost) {
	b.Helper()
	base := takeFootprint()
	clients := make([]io.Closer, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				c, err := open(ctx)
				cancel()
				if err != nil {
					b.Error(err)
					return
				}
				clients[i] = c
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		closeAll(b, clients)
		b.FailNow()
	}
	time.Sleep(100 * time.Millisecond) // for the last responses' goroutines to end
	return clients, measureIdle(b, n, base)
}

func closeAll(b *testing.B, clients []io.Closer) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(clients); i = int(next.Add(1)) - 1 {
				if clients[i] != nil {
					_ = clients[i].Close()
				}
			}
		})
	}
	wg.Wait()
}

// initTimes is the mean time to make and initialize one client against a
// warm server: raw mcp-go as users have it (sharing http.DefaultTransport and
// its pooled connections with every other raw client), raw mcp-go given an
// http.Transport of its own (so it dials, as each ResilientClient does), a
// ResilientClient, and, if shared is not nil, a ResilientClient given shared.
// They take turns, k fresh clients each.
func initTimes(b *testing.B, url string, k int, shared *http.Client) (raw, rawOwn, resilient, resilientShared time.Duration) {
	b.Helper()
	ctx := context.Background()
	openRaw := func(opts ...transport.StreamableHTTPCOption) *mcpclient.Client {
		c, err := mcpclient.NewStreamableHttpClient(url, opts...)
		if err == nil {
			err = c.Start(ctx)
		}
		if err == nil {
			_, err = c.Initialize(ctx, rig.BenchInit())
		}
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	for range k {
		start := time.Now()
		c := openRaw()
		raw += time.Since(start)
		_ = c.Close()

		start = time.Now()
		tr := http.DefaultTransport.(*http.Transport).Clone()
		c = openRaw(transport.WithHTTPBasicClient(&http.Client{Transport: tr}))
		rawOwn += time.Since(start)
		_ = c.Close()
		tr.CloseIdleConnections()

		openResilient := func(opts ...client.Option) time.Duration {
			start := time.Now()
			rc, err := client.New(url, append(opts, client.WithKeepAlive(time.Minute))...)
			if err == nil {
				_, err = rc.Initialize(ctx, rig.BenchInit())
			}
			d := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			_ = rc.Close()
			return d
		}
		resilient += openResilient()
		if shared != nil {
			resilientShared += openResilient(client.WithHTTPClient(shared))
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	n := time.Duration(k)
	return raw / n, rawOwn / n, resilient / n, resilientShared / n
}

// probeSpread watches the clients' keepalive probes for two intervals from
// when they were opened, and returns, over the mean per 100ms, the most
// probes seen in any 100ms window (peak), and the lesser of the two
// intervals' peaks (steady): a herd comes every interval and shows in both,
// where a stall of either process shows in one. Probes are counted as they
// complete (the Stats the client publishes), so a stall of the server
// process shows as a burst; a stall of this one as a burst of the probes
// its timers then fire late.
func probeSpread(clients []*client.ResilientClient, interval time.Duration) (peak, steady float64) {
	probes := func() uint64 {
		var sum uint64
		for _, c := range clients {
			sum += c.Stats().Probes
		}
		return sum
	}
	type sample struct {
		at     time.Duration
		probes uint64
	}
	start := time.Now()
	var samples []sample
	for time.Since(start) < 2*interval {
		samples = append(samples, sample{time.Since(start), probes()})
		time.Sleep(5 * time.Millisecond)
	}
	const window = 100 * time.Millisecond
	var peaks [2]float64 // by the interval the window starts in
	j := 0
	for i := range samples {
		for j < len(samples) && samples[j].at-samples[i].at < window {
			j++
		}
		if j == len(samples) {
			break
		}
		// The samples come about every 5ms: scale to exactly 100ms.
		n := float64(samples[j].probes-samples[i].probes) * float64(window) / float64(samples[j].at-samples[i].at)
		k := min(int(samples[i].at/interval), 1)
		peaks[k] = max(peaks[k], n)
	}
	last := samples[len(samples)-1]
	mean := float64(last.probes-samples[0].probes) * float64(window) / float64(last.at-samples[0].at)
	if mean == 0 {
		return 0, 0
	}
	return max(peaks[0], peaks[1]) / mean, min(peaks[0], peaks[1]) / mean
}
