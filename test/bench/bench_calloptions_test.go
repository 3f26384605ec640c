package bench

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// BenchmarkCallOptions is what a call's options cost, against the same
// call without options on the same client, in the same run: options=flags
// carries SafeToRepeat and FailFast (decisions only), options=progress
// ProgressTimeout and OnProgress (a token in the request, a timer, a
// registry entry). The options' context is made once, as a caller that
// reuses it would; WithCallOptions itself is one context and one
// allocation more. Goal (issue 28): a call with options costs at most one
// allocation more than one without.
func BenchmarkCallOptions(b *testing.B) {
	for _, era := range []testserver.Era{testserver.SessionEra, testserver.StatelessEra} {
		b.Run("era="+era.String(), func(b *testing.B) { benchCallOptions(b, era) })
	}
}

func benchCallOptions(b *testing.B, era testserver.Era) {
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	c, err := client.New(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(context.Background(), rig.BenchInit()); err != nil {
		b.Fatal(err)
	}
	base, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	// token is no options, but a request carrying a progressToken of the
	// caller's: what any progressToken costs with mcp-go (its Meta
	// marshals through a map, the server decodes it), in the client and the
	// in-process server alike, so that progress's own cost is
	// progress-extra minus token-extra.
	plain := rig.ToolRequest("echo", map[string]any{"text": "x"})
	withToken := rig.ToolRequest("echo", map[string]any{"text": "x"})
	withToken.Params.Meta = &mcp.Meta{ProgressToken: "caller-token"}
	variants := []struct {
		name string
		ctx  context.Context
		req  mcp.CallToolRequest
	}{
		{"none", base, plain},
		{"flags", client.WithCallOptions(base, client.SafeToRepeat(), client.FailFast()), plain},
		{"progress", client.WithCallOptions(base, client.ProgressTimeout(time.Minute), client.OnProgress(func(mcp.ProgressNotification) {})), plain},
		{"token", base, withToken},
	}
	call := func(k int) {
		if _, err := c.CallTool(variants[k].ctx, variants[k].req); err != nil {
			b.Fatal(err)
		}
	}
	spent := make([]time.Duration, len(variants))
	for i := 0; b.Loop(); i++ {
		for j := range variants {
			k := (i + j) % len(variants) // each takes its turn after each other
			start := time.Now()
			for range 16 {
				call(k)
			}
			spent[k] += time.Since(start)
		}
	}
	b.StopTimer()
	for k := 1; k < len(variants); k++ {
		b.ReportMetric(float64(spent[k])/float64(spent[0]), variants[k].name+"-x-none")
	}
	none := testing.AllocsPerRun(200, func() { call(0) })
	b.ReportMetric(none, "none-allocs/call")
	for k := 1; k < len(variants); k++ {
		b.ReportMetric(testing.AllocsPerRun(200, func() { call(k) })-none, variants[k].name+"-extra-allocs/call")
	}
}
