package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// F25 when mcp-go's error is not built on the context's (a stream cut at
// the deadline reads as "unexpected nil response"): the caller still gets
// context.DeadlineExceeded, with ErrOutcomeUnknown since it was sent.
func TestDeadlineIsInTheChainWhateverMCPGoSays(t *testing.T) {
	r := retries{method: "tools/call", Retries: policy.Retries{Max: 3, CtxErr: context.DeadlineExceeded}}
	v := policy.Verdict{Class: policy.Caller, Sent: true}
	err := r.end(r.After(v, func() bool { return false }, time.Time{}), transport.NewError(errors.New("unexpected nil response")))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v; want ErrOutcomeUnknown and context.DeadlineExceeded", err)
	}
}

// A context error of the client's own (a session closed under a stream's
// resumption) is not the caller's: errors.Is must not say it cancelled.
func TestOnlyTheCallersContextErrorIsInTheChain(t *testing.T) {
	cut := transport.NewError(fmt.Errorf("failed to resume the SSE stream: %w", context.Canceled))
	r := retries{method: "tools/call", Retries: policy.Retries{Max: 3, MayHaveRun: true}}
	err := r.fail("the response stream was cut before the answer", cut)
	if errors.Is(err, context.Canceled) || !errors.Is(err, ErrOutcomeUnknown) || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("err = %v; want ErrOutcomeUnknown saying, not wrapping, context.Canceled", err)
	}
	r.CtxErr = context.Canceled
	if err := r.fail("cancelled", cut, context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("the caller cancelled, and err = %v does not say so", err)
	}
}

// A 503 that came back as the call's context ended proves the call did not
// run: ErrUnavailable, not ErrOutcomeUnknown, so a non-idempotent call may
// be sent again. The context ends in the transport, once the answer is in,
// so the race a loaded machine runs by chance (the deadline passing while
// mcp-go reads the body; 8 of 200 calls of
// TestRetryBudgetCapsRetriesOfManyFailingCalls) is run the same way every
// time.
func TestDeclinedAnswerAsTheContextEndsDidNotRun(t *testing.T) {
	srv, err := testserver.Start(testserver.Config{Era: testserver.SessionEra})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var endCall atomic.Pointer[context.CancelFunc]
	c, err := New(srv.URL(), WithKeepAlive(0), WithTransportWrapper(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if end := endCall.Load(); err == nil && resp.StatusCode == http.StatusServiceUnavailable && end != nil {
				(*end)()
			}
			return resp, err
		})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	srv.FailPOSTs(1, http.StatusServiceUnavailable, "", false, "tools/call")
	callCtx, endTheCall := context.WithCancel(ctx)
	defer endTheCall()
	endCall.Store(&endTheCall)
	_, err = c.CallTool(callCtx, incrementRequest())
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("call = %v; want ErrUnavailable (the server declined it) and the context's error", err)
	}
	if runs := srv.ToolRuns("increment"); runs != 0 {
		t.Errorf("increment ran %d times; the server declined it", runs)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
