//go:build !linux

package testenv

import (
	"errors"
	"syscall"
	"time"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// alive is conservative where we cannot tell: stale directories are kept.
func alive(int) bool { return true }

// cpuTime is not read where there is no /proc.
func cpuTime(int) (time.Duration, error) {
	return 0, errors.New("testenv: CPU time is read from /proc, which this OS does not have")
}
