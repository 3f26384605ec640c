package policy

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/mcp"
)

// F40: a retryable JSON-RPC code is a server that does not serve now. A
// safe call is resent after the backoff's pauses, past WithMaxAttempts,
// until DrainWait of pauses, the deadline or the backoff's end; an unsafe
// one ends at once, outcome unknown; a code off the list is the server's
// answer.
func TestAfterRetryableCode(t *testing.T) {
	internal := Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.INTERNAL_ERROR}
	retries := func(pause time.Duration) *Retries {
		return &Retries{Max: 3, PoolSize: 1, RetryableRPC: []int{mcp.INTERNAL_ERROR},
			NewBackOff: func() backoff.BackOff { return backoff.NewConstantBackOff(pause) }}
	}
	safe := func() bool { return true }
	unsafe := func() bool { return false }

	t.Run("safe: paced, bounded by DrainWait, not by the attempts", func(t *testing.T) {
		r := retries(time.Second)
		var resends int
		for range 100 {
			a := r.After(internal, safe, time.Time{})
			if a.End != Continue {
				if a.End != GiveUp || !r.MayHaveRun || a.Why == "" {
					t.Fatalf("the drain ended with %+v, MayHaveRun %v; want GiveUp, outcome unknown, with a why", a, r.MayHaveRun)
				}
				break
			}
			if a.Pause != time.Second || !a.Budget || a.Discard != NoLoss || a.Reconnect {
				t.Fatalf("resend %d: %+v; want the backoff's pause, paid from the budget, on the same session", resends+1, a)
			}
			resends++
		}
		if want := int(DrainWait / time.Second); resends != want {
			t.Errorf("%d resends of 1 s pauses, want %d: DrainWait of pauses", resends, want)
		}
	})
	t.Run("safe: the deadline ends it", func(t *testing.T) {
		r := retries(time.Second)
		a := r.After(internal, safe, time.Now().Add(100*time.Millisecond))
		if a.End != GiveUp || !slices.ContainsFunc(a.Also, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }) {
			t.Errorf("a 1 s pause with 100 ms left: %+v; want GiveUp with the deadline", a)
		}
	})
	t.Run("safe: the backoff's end ends it", func(t *testing.T) {
		r := retries(time.Second)
		r.NewBackOff = func() backoff.BackOff { return &backoff.StopBackOff{} }
		if a := r.After(internal, safe, time.Time{}); a.End != GiveUp {
			t.Errorf("a backoff that stops: %+v; want GiveUp", a)
		}
	})
	t.Run("not safe: outcome unknown at once, the replay refused", func(t *testing.T) {
		r := retries(time.Second)
		a := r.After(internal, unsafe, time.Time{})
		if a.End != GiveUp || !a.Refused || !r.MayHaveRun {
			t.Errorf("-32603 to an unsafe call: %+v, MayHaveRun %v; want GiveUp refused, outcome unknown", a, r.MayHaveRun)
		}
	})
	t.Run("a code off the list: the server's answer", func(t *testing.T) {
		r := retries(time.Second)
		r.RetryableRPC = nil
		if a := r.After(internal, safe, time.Time{}); a.End != AsIs {
			t.Errorf("-32603 off the list: %+v; want AsIs", a)
		}
		other := Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.INVALID_PARAMS}
		if a := retries(time.Second).After(other, safe, time.Time{}); a.End != AsIs {
			t.Errorf("-32602: %+v; want AsIs", a)
		}
	})
}

// A handshake answered with a retryable code is dialled again; any other
// answer of the server's ends the dial loop, as before.
func TestDialEnds(t *testing.T) {
	codes := []int{mcp.INTERNAL_ERROR}
	for _, tt := range []struct {
		name string
		v    Verdict
		want bool
	}{
		{"-32603, listed", Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.INTERNAL_ERROR}, false},
		{"-32601", Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.METHOD_NOT_FOUND}, true},
		{"a 4xx without a code", Verdict{Class: ServerError}, true},
		{"unreachable", Verdict{Class: NotSent, Unreachable: true}, false},
	} {
		if got := DialEnds(tt.v, codes); got != tt.want {
			t.Errorf("%s: DialEnds %v, want %v", tt.name, got, tt.want)
		}
	}
	if !DialEnds(Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.INTERNAL_ERROR}, nil) {
		t.Errorf("-32603 with no retryable codes: the dial loop goes on; want it ended")
	}
}

// A probe answered with a retryable code says nothing of the session: the
// server does not serve now, as after a 503; another JSON-RPC error is
// still proof of life.
func TestProbeAnsweredWithARetryableCode(t *testing.T) {
	codes := []int{mcp.INTERNAL_ERROR}
	internal := Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.INTERNAL_ERROR}
	if got := Probe(internal, codes); got != Busy {
		t.Errorf("a probe answered -32603: %v, want Busy", got)
	}
	if got := Probe(internal, nil); got != Alive {
		t.Errorf("a probe answered -32603, no retryable codes: %v, want Alive", got)
	}
	if got := Probe(Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.METHOD_NOT_FOUND}, codes); got != Alive {
		t.Errorf("a probe answered -32601: %v, want Alive", got)
	}
	if got := AfterRecheck(internal, codes); got != StillAway {
		t.Errorf("a kept session's probe answered -32603: %v, want StillAway", got)
	}
}

// A drain ends; a bug does not: a server that answers the probe taken
// before the resend serves, and the code it answers the resend with is
// its answer, at once; one that answers the probe with the code too (a
// gateway whose child restarts) is waited out as before.
func TestAfterRetryableCodeFromAServerThatServes(t *testing.T) {
	internal := Verdict{Class: ServerError, RPCAnswer: true, RPCCode: mcp.INTERNAL_ERROR}
	r := &Retries{Max: 3, PoolSize: 1, RetryableRPC: []int{mcp.INTERNAL_ERROR},
		NewBackOff: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Second) }}
	safe := func() bool { return true }
	a := r.After(internal, safe, time.Time{})
	if a.End != Continue || !r.Doubts(time.Now().Add(-time.Minute)) {
		t.Fatalf("the first -32603: %+v, doubts %v; want a resend after a probe", a, r.Doubts(time.Now().Add(-time.Minute)))
	}
	// The probe answered -32603 too (AfterProbe: busy): still a drain.
	r.AfterProbe(internal, time.Time{})
	if a = r.After(internal, safe, time.Time{}); a.End != Continue {
		t.Fatalf("-32603 after a probe answered -32603: %+v; want the drain waited out", a)
	}
	// The probe answered: the server serves.
	r.Probed()
	if a = r.After(internal, safe, time.Time{}); a.End != AsIs {
		t.Errorf("-32603 after a probe the server answered: %+v; want AsIs, the server's answer", a)
	}
	// A probe that no code came before says nothing of one.
	r2 := &Retries{Max: 3, PoolSize: 1, RetryableRPC: []int{mcp.INTERNAL_ERROR},
		NewBackOff: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Second) }}
	r2.Probed()
	if a = r2.After(internal, safe, time.Time{}); a.End != Continue {
		t.Errorf("-32603 after a probe before any code: %+v; want a resend", a)
	}
}

// Issue 43: only a session that proves which server it is (an id the
// server issued) is kept through an outage; a lost connection under a
// request to a sessionless server puts what the client knew in doubt.
func TestSessionlessServerIsAskedWhoItIs(t *testing.T) {
	if !KeepThroughOutage(Session{SessionEra: true}) || KeepThroughOutage(Session{SessionEra: true, Sessionless: true}) || KeepThroughOutage(Session{Sessionless: true}) {
		t.Error("KeepThroughOutage: want a session with an id kept, a sessionless one replaced")
	}
	lost := Verdict{Class: OutcomeUnknown}
	if !Reidentify(lost, Session{Sessionless: true}) || Reidentify(lost, Session{SessionEra: true}) {
		t.Error("Reidentify: want a lost answer from a sessionless server only")
	}
	if Reidentify(Verdict{Class: ServerError, RPCAnswer: true}, Session{Sessionless: true}) {
		t.Error("Reidentify: the server's own answer leaves nothing in doubt")
	}
}
