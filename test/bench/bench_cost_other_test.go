//go:build !unix

package bench

import "time"

// processCPU cannot be read here: cpu-x-raw is then NaN.
func processCPU() time.Duration { return 0 }
