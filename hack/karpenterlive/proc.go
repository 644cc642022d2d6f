package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// controller is one system's controller process: Karpenter's or our
// operator, each a process of its own so that its CPU time and peak
// memory are its own.
type controller struct {
	name, logPath string
	cmd           *exec.Cmd
	done          chan struct{}
	err           error
	// CPU is the user+system time and MaxRSS the peak resident set, in
	// bytes, of the process, read from its rusage once it has exited.
	CPU    time.Duration
	MaxRSS int64
}

// startController starts bin with args and extra environment, its output
// into logPath.
func startController(name, bin, logPath string, env []string, args ...string) (*controller, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Killed with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &controller{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		f.Close()
		if st := cmd.ProcessState; st != nil {
			if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
				c.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				c.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
			}
		}
		close(c.done)
	}()
	return c, nil
}

// exited reports, as an error naming the log, whether the process has
// exited.
func (c *controller) exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s exited (%v); log: %s", c.name, c.err, c.logPath)
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to 30 s, then kills; CPU and MaxRSS are
// set when it returns.
func (c *controller) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
