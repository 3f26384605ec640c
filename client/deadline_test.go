package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
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
