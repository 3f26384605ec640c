package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

func TestSharedDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newSharedDeadlines(160 * time.Second) // slack 10s
		start := time.Now()

		var first [deadlineShards]context.Context
		for i := range first {
			first[i] = d.getOf(i)
			deadline, ok := first[i].Deadline()
			if !ok || deadline.Before(start.Add(160*time.Second)) || deadline.After(start.Add(170*time.Second)) {
				t.Fatalf("deadline %v from now, want between 160s and 170s", deadline.Sub(start))
			}
		}
		a := first[0]
		deadline, _ := a.Deadline()
		time.Sleep(9 * time.Second)
		for i := range first {
			if d.getOf(i) != first[i] {
				t.Fatal("a call within the slack got a context of its own")
			}
		}
		for range 100 {
			if c := d.get(); !slices.Contains(first[:], c) {
				t.Fatal("a call within the slack got a context of its own")
			}
		}
		time.Sleep(2 * time.Second)
		b := d.getOf(0)
		if b == a {
			t.Fatal("a call 11s later shares a deadline that is less than the timeout away")
		}
		if bd, _ := b.Deadline(); time.Until(bd) < 160*time.Second {
			t.Fatalf("new deadline only %v away", time.Until(bd))
		}

		time.Sleep(time.Until(deadline))
		synctest.Wait()
		if !errors.Is(a.Err(), context.DeadlineExceeded) {
			t.Fatalf("at its deadline the shared context says %v", a.Err())
		}
		if b.Err() != nil {
			t.Fatalf("the later context ended with the earlier one: %v", b.Err())
		}
		d.close()
		if !errors.Is(b.Err(), context.Canceled) {
			t.Fatalf("after close the shared context says %v", b.Err())
		}
		time.Sleep(time.Minute)
		for i := range first {
			if c := d.getOf(i); c == b || !errors.Is(c.Err(), context.Canceled) {
				t.Fatalf("a context made after close says %v", c.Err())
			}
		}
	})
}

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
