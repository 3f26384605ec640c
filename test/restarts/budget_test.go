package restarts

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/retry"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// WithRetryBudget: two clients share a budget of exactly one retry (a
// reserve of one, refilled once every 100 s, nothing from deposits). Each
// loses the answer of a safe call once; the first client's replay spends the
// one retry and succeeds, the second's finds the budget spent and gives up
// at once with ErrOutcomeUnknown, its call run once.
func TestRetryBudgetIsSharedByTheClientsGivenIt(t *testing.T) {
	shared := retry.NewBudget(100*time.Second, 0.01, 0)
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false, client.WithRetryBudget(shared))
	r.Start()
	// No tools listed first: the client lists them itself to learn that
	// echo is read-only, and a lost answer is then replayed if the budget
	// allows.
	other := secondClient(t, r, client.WithRetryBudget(shared))

	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	r.MustEcho("replayed: the budget's one retry")
	if runs := r.Srv.ToolRuns("echo"); runs != 2 {
		t.Errorf("echo ran %d times, want 2 (the lost answer and the replay)", runs)
	}

	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	_, err := rig.CallTool(r.Ctx(), other, "echo", map[string]any{"text": "no retry left"})
	rig.CheckContract(t, err, client.ErrOutcomeUnknown, "tools/call")
	if err != nil && !strings.Contains(err.Error(), "retry budget exhausted") {
		t.Errorf("error %q does not say the retry budget was spent", err)
	}
	if runs := r.Srv.ToolRuns("echo"); runs != 3 {
		t.Errorf("echo ran %d times, want 3: the second client's call once, not replayed", runs)
	}
	if s := other.Stats(); s.Retries != 0 || s.OutcomeUnknown != 1 {
		t.Errorf("second client's stats %+v: want no retry and one OutcomeUnknown", s)
	}
}

// The default budget is the client's own: a client given an empty budget
// does not drain the default one of another client.
func TestRetryBudgetDefaultIsPerClient(t *testing.T) {
	empty := retry.NewBudget(100*time.Second, 0, 0)
	r := rig.New(t, testserver.Config{Era: testserver.StatelessEra}, false)
	r.Start()
	starved := secondClient(t, r, client.WithRetryBudget(empty))
	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	if _, err := rig.CallTool(r.Ctx(), starved, "echo", map[string]any{"text": "x"}); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("call on an empty budget = %v; want ErrOutcomeUnknown", err)
	}
	r.Srv.FailPOSTs(1, 0, "", true, "tools/call")
	r.MustEcho("replayed from the default budget")
}

// secondClient is another client of r's server, closed with the test.
func secondClient(t *testing.T, r *rig.Rig, opts ...client.Option) *client.ResilientClient {
	t.Helper()
	c, err := client.New(r.Srv.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
