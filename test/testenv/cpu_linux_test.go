package testenv

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestCPUTimeGrowsWithWork works until this test's own CPU time, read from
// /proc, has grown by 50 ms (on a loaded machine that takes longer than
// 50 ms of wall time, never forever), as getrusage does; a process that does not exist is an
// error.
func TestCPUTimeGrowsWithWork(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for deadline := time.Now().Add(30 * time.Second); ; x++ {
		if x%100000 == 0 {
			now, err := cpuTime(os.Getpid())
			if err != nil {
				t.Fatal(err)
			}
			if now-before >= 50*time.Millisecond {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CPU time grew by %s in 30 s of work (%d loops)", now-before, x)
			}
		}
	}
	// The kernel's own account of this process agrees with /proc's.
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	got, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()); got < want-50*time.Millisecond || got > want+50*time.Millisecond {
		t.Errorf("/proc says %s of CPU, getrusage %s", got, want)
	}
	if _, err := cpuTime(1 << 30); err == nil {
		t.Error("the CPU time of a process that does not exist was read without an error")
	}
}
