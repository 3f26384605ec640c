//go:build !unix

package resilientmcp_test

import "time"

// processCPU cannot be read here: cpu-x-raw is then NaN.
func processCPU() time.Duration { return 0 }
