package health_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/resilientmcp/resilientmcp/health"
)

// A Monitor watches one member. With Interval 0 nothing runs in the
// background; Check probes on demand (before a call is sent on a member
// idle too long), and the threshold decides when the member must go.
func ExampleMonitor() {
	alive := true
	m := health.Start(health.Config{
		Threshold: 2,
		Probe: func(ctx context.Context) error {
			if !alive {
				return errors.New("no answer")
			}
			return nil
		},
		OnUnhealthy: func(err error) { fmt.Println("replace the member:", err) },
	})
	defer m.Stop()

	fmt.Println(m.Check(context.Background()))
	alive = false
	m.Check(context.Background())
	fmt.Println("failures:", m.Failures(), "unhealthy:", m.Unhealthy())
	m.Check(context.Background())
	fmt.Println("failures:", m.Failures(), "unhealthy:", m.Unhealthy())
	// Output:
	// <nil>
	// failures: 1 unhealthy: false
	// replace the member: no answer
	// failures: 2 unhealthy: true
}
