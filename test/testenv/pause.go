//go:build unix

package testenv

import (
	"fmt"
	"syscall"
	"time"
)

// PauseAPIServer freezes the kube-apiserver (SIGSTOP) for d, then lets it
// go on (SIGCONT): an outage in which requests hang until their clients
// time out, as behind a network partition, while etcd keeps the state. It
// returns once the apiserver runs again.
func (e *Env) PauseAPIServer(d time.Duration) error {
	for _, p := range e.procs {
		if p.name != "kube-apiserver" {
			continue
		}
		pid := p.cmd.Process.Pid
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("testenv: pausing kube-apiserver: %w", err)
		}
		time.Sleep(d)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return fmt.Errorf("testenv: resuming kube-apiserver: %w", err)
		}
		return nil
	}
	return fmt.Errorf("testenv: no kube-apiserver process")
}
