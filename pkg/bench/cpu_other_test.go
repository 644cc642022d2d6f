//go:build !unix

package bench_test

import "time"

// cpuTime is zero where getrusage is not available: cpu-ms/op reads 0.
func cpuTime() time.Duration { return 0 }
