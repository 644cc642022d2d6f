package testenv

import "syscall"

// sysProcAttr puts a component in its own process group and has the kernel
// kill it if the test binary dies without running its cleanups (e.g. on a
// `go test -timeout` panic).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
