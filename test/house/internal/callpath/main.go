// Command callpath makes one plain CallTool over Streamable HTTP, against
// a real server on 127.0.0.1, and writes the coverage counters of that one
// call alone: built with -cover -covermode=atomic and -coverpkg naming the
// client's packages, its counters are cleared after a first call has
// opened the session, so that what they hold afterwards is what the second
// call ran. They are written twice: into DIR/out when the request reaches
// the transport (a WithTransportWrapper beneath every layer of the
// client's: what ran between entry and the transport), and into DIR/all
// once the call has returned (the answer's way back too). The stack at
// the transport, the chain of calls from CallTool down, goes into
// DIR/stack.txt. test/house's
// TestCallToolVisitsFewFiles reads them.
//
// Usage: callpath -era session|stateless DIR
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/coverage"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

func main() {
	era := flag.String("era", "session", "the server's era: session or stateless")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: callpath -era session|stateless DIR")
		os.Exit(2)
	}
	if err := run(*era, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "callpath:", err)
		os.Exit(1)
	}
}

func run(era, dir string) error {
	cfg := testserver.Config{Era: testserver.SessionEra}
	if era == "stateless" {
		cfg.Era = testserver.StatelessEra
	}
	srv, err := testserver.Start(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	out, all := filepath.Join(dir, "out"), filepath.Join(dir, "all")
	for _, d := range []string{out, all} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var measuring atomic.Bool
	var reached error = errors.New("the measured call never reached the transport")
	c, err := client.New(srv.URL(), client.WithTransportWrapper(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if measuring.CompareAndSwap(true, false) {
				reached = errors.Join(snapshot(out), writeStack(filepath.Join(dir, "stack.txt")))
			}
			return next.RoundTrip(r)
		})
	}))
	if err != nil {
		return err
	}
	defer c.Close()
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "x"}
	ctx := context.Background()
	// The first call opens the session (and lists nothing: a call that
	// succeeds never needs the tools' annotations).
	if _, err := c.CallTool(ctx, req); err != nil {
		return fmt.Errorf("first call: %w", err)
	}
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	measuring.Store(true)
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("measured call: %w", err)
	}
	if err := snapshot(all); err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("measured call: unexpected result %+v", res)
	}
	return reached
}

// snapshot writes the counters as they stand, and the meta-data that
// covdata needs to read them, into dir.
func snapshot(dir string) error {
	if err := coverage.WriteCountersDir(dir); err != nil {
		return err
	}
	return coverage.WriteMetaDir(dir)
}

// writeStack writes the files of the frames on the stack, one a line, the
// innermost first: the call chain from the caller to the transport.
func writeStack(path string) error {
	pcs := make([]uintptr, 256)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	var b strings.Builder
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "%s\t%s\n", f.File, f.Function)
		if !more {
			break
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
