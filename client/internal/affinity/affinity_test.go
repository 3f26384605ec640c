package affinity

import (
	"errors"
	"testing"

	"github.com/resilientmcp/resilientmcp/client/internal/policy"
)

func TestVerdictAfterYoungLossesInARow(t *testing.T) {
	var tr Tracker
	var m Member
	cause := errors.New("session not found")
	if v := tr.Lost(&m, false, cause); v != nil {
		t.Fatalf("a loss that was not young gave a verdict: %v", v)
	}
	for i := int32(1); i < policy.NoAffinityAfter; i++ {
		if v := tr.Lost(&m, true, cause); v != nil {
			t.Fatalf("verdict after %d young losses, want %d", i, policy.NoAffinityAfter)
		}
	}
	if m.Held() != nil {
		t.Fatal("held before the verdict")
	}
	v := tr.Lost(&m, true, cause)
	if v == nil || v.Young != policy.NoAffinityAfter || !v.Report {
		t.Fatalf("verdict = %+v, want %d young losses, reported", v, policy.NoAffinityAfter)
	}
	if !errors.Is(v, ErrNoAffinity) || !errors.Is(v, cause) {
		t.Fatalf("the verdict %v does not match ErrNoAffinity and its cause", v)
	}
	held := m.Held()
	var he *Error
	if !errors.As(held, &he) || he.Report {
		t.Fatalf("held = %#v, want the verdict, not to be reported again", held)
	}
	// Another member's verdict, while this one's was reported: not
	// reported again.
	var other Member
	for range policy.NoAffinityAfter - 1 {
		tr.Lost(&other, true, cause)
	}
	if v := tr.Lost(&other, true, cause); v == nil || v.Report {
		t.Fatalf("second member's verdict = %+v, want one not reported", v)
	}
}

func TestProvenSessionStartsTheCountOver(t *testing.T) {
	var tr Tracker
	var m Member
	for range policy.NoAffinityAfter {
		tr.Lost(&m, true, errors.New("expired"))
	}
	if m.Held() == nil {
		t.Fatal("no verdict held")
	}
	tr.Proven(&m)
	if err := m.Held(); err != nil {
		t.Fatalf("held after a session proved affinity: %v", err)
	}
	for i := int32(1); i < policy.NoAffinityAfter; i++ {
		if v := tr.Lost(&m, true, errors.New("expired")); v != nil {
			t.Fatalf("verdict after %d young losses since the proof", i)
		}
	}
	if v := tr.Lost(&m, true, errors.New("expired")); v == nil || !v.Report {
		t.Fatalf("verdict after the proof = %+v, want one reported anew", v)
	}
}
