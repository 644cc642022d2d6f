package explaincmd

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: explain raises GOGC and sets a soft memory limit, unless
// the environment sets them.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, tc := range []struct {
		name        string
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{"defaults", nil, gcPercent, gcSoftLimit},
		{"GOGC set", map[string]string{"GOGC": "50"}, 100, gcSoftLimit},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "2GiB"}, gcPercent, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			tuneGC(func(k string) string { return tc.env[k] })
			if got := debug.SetGCPercent(100); got != tc.wantPercent {
				t.Errorf("GC percent %d, want %d", got, tc.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}
