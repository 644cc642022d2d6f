// Package interrupt is how a command stops on SIGINT and SIGTERM: the
// first signal cancels the command's context with a *Signal as its cause,
// and what the command is doing at that moment (Doing) names what was
// interrupted; ExitCode is the exit status rule (128 + the signal's
// number: 130 for SIGINT, 143 for SIGTERM), in one place for main and
// root.Execute.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
)

// Signal is the cause of a context cancelled by a signal. It unwraps to
// context.Canceled, so errors.Is(err, context.Canceled) still holds.
type Signal struct {
	Sig os.Signal
}

func (s *Signal) Error() string { return "interrupted by " + Name(s.Sig) }

// Unwrap returns context.Canceled.
func (s *Signal) Unwrap() error { return context.Canceled }

// Name is the signal's conventional name: SIGINT, SIGTERM.
func Name(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// ExitCode is the exit status of a process a signal stopped: 128 plus the
// signal's number, as shells report it (130 for SIGINT, 143 for SIGTERM).
func ExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// FromContext returns the signal that cancelled ctx, or nil.
func FromContext(ctx context.Context) *Signal {
	var s *Signal
	if errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// Err is ctx's error with its cause: "interrupted by SIGTERM" when a
// signal ended it, else ctx.Err().
func Err(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if s := FromContext(ctx); s != nil {
		return s
	}
	return ctx.Err()
}

type doingKey struct{}

// WithDoing returns a context in which Doing records what the command
// does, for Describe.
func WithDoing(ctx context.Context) context.Context {
	return context.WithValue(ctx, doingKey{}, new(atomic.Pointer[string]))
}

// Doing records that the command is now doing what ("reading
// deploy.yaml", "rendering kustomization overlays/prod"). It is a no-op
// without WithDoing.
func Doing(ctx context.Context, format string, args ...any) {
	if p, ok := ctx.Value(doingKey{}).(*atomic.Pointer[string]); ok {
		s := fmt.Sprintf(format, args...)
		p.Store(&s)
	}
}

// Describe returns what the command was last doing, or "".
func Describe(ctx context.Context) string {
	if p, ok := ctx.Value(doingKey{}).(*atomic.Pointer[string]); ok {
		if s := p.Load(); s != nil {
			return *s
		}
	}
	return ""
}
