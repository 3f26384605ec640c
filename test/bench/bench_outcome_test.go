package bench

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkUnsafeCallAfterRestart measures how precisely the client tells
// a non-idempotent call that did not run from one that may have: each
// iteration restarts the server (a new process on the same port) and at
// once calls increment, the tool that must never run twice, as an agent in
// a tight loop would. The caller never listed tools.
//
// Metrics, as shares of the calls:
//   - ok: succeeded, and ran once;
//   - unknown: ErrOutcomeUnknown although the tool did not run (a false
//     alarm: the request went out on a connection the old server had
//     closed, and the client could not prove it was never read);
//   - unknown-ran: ErrOutcomeUnknown and it did run (the answer was lost);
//   - other: any other error. And dup: calls that ran twice; must be 0.
//
// transport=default is the client's own HTTP client, which checks that a
// pooled connection is still open before writing on it; transport=user is
// a plain http.Transport given with WithHTTPClient, which cannot be checked.
func BenchmarkUnsafeCallAfterRestart(b *testing.B) {
	for _, era := range rig.BothEras {
		for _, own := range []bool{true, false} {
			name := "era=" + era.String() + "/transport=default"
			var opts []client.Option
			if !own {
				name = "era=" + era.String() + "/transport=user"
				opts = append(opts, client.WithHTTPClient(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}))
			}
			b.Run(name, func(b *testing.B) { benchUnsafeAfterRestart(b, era, opts) })
		}
	}
}

func benchUnsafeAfterRestart(b *testing.B, era testserver.Era, opts []client.Option) {
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	c, err := client.New(srv.URL(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	var ok, unknown, unknownRan, other, dup int
	for range b.N {
		if err := srv.Restart(); err != nil {
			b.Fatal(err)
		}
		before := srv.ToolRuns("increment")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := rig.CallTool(ctx, c, "increment", nil)
		cancel()
		ran := srv.ToolRuns("increment") - before
		switch {
		case ran > 1:
			dup++
		case err == nil && ran == 1:
			ok++
		case errors.Is(err, client.ErrOutcomeUnknown) && ran == 0:
			unknown++
		case errors.Is(err, client.ErrOutcomeUnknown):
			unknownRan++
		default:
			other++
			b.Logf("increment after a restart: ran %d times, err %v", ran, err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(ok)/n, "ok")
	b.ReportMetric(float64(unknown)/n, "unknown")
	b.ReportMetric(float64(unknownRan)/n, "unknown-ran")
	b.ReportMetric(float64(other)/n, "other")
	b.ReportMetric(float64(dup), "dup")
	if dup > 0 {
		b.Errorf("%d calls ran twice", dup)
	}
}
