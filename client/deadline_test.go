package client

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

func TestSharedDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, stop := context.WithCancel(context.Background())
		d := newSharedDeadlines(parent, 160*time.Second) // slack 10s
		start := time.Now()

		a := d.get()
		deadline, ok := a.Deadline()
		if !ok || deadline.Before(start.Add(160*time.Second)) || deadline.After(start.Add(170*time.Second)) {
			t.Fatalf("deadline %v from now, want between 160s and 170s", deadline.Sub(start))
		}
		time.Sleep(9 * time.Second)
		if d.get() != a {
			t.Fatal("a call within the slack got a context of its own")
		}
		time.Sleep(2 * time.Second)
		b := d.get()
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
		stop()
		if !errors.Is(b.Err(), context.Canceled) {
			t.Fatalf("after the parent ended the shared context says %v", b.Err())
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
