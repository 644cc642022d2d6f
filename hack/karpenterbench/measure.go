package main

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"
)

// heapMetric is the bytes of live and not yet swept heap objects; reading
// it does not stop the world, unlike runtime.ReadMemStats.
const heapMetric = "/memory/classes/heap/objects:bytes"

// heapPeak runs f and returns how far the heap grew above its level
// before f, sampled every millisecond (and once at the end), after a GC so
// that the baseline is what is live. It is an estimate: garbage not yet
// collected counts while it lasts, as it does for a process's footprint.
func heapPeak(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: heapMetric}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var m uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			m = max(m, read())
			select {
			case <-done:
				peak <- max(m, read())
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	m := <-peak
	if m < base {
		return 0
	}
	return m - base
}

// cpuTime is the CPU time (user and system) the process has used so far:
// on a machine shared with other work, the part of a solve's wall time
// that is its own. It counts every goroutine, the GC's included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
