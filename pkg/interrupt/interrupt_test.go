package interrupt

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
)

func TestExitCodeIs128PlusTheSignal(t *testing.T) {
	tests := []struct {
		sig  os.Signal
		want int
		name string
	}{
		{os.Interrupt, 130, "SIGINT"},
		{syscall.SIGTERM, 143, "SIGTERM"},
		{syscall.SIGHUP, 129, "hangup"},
	}
	for _, tc := range tests {
		if got := ExitCode(tc.sig); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.sig, got, tc.want)
		}
		if got := Name(tc.sig); got != tc.name {
			t.Errorf("Name(%v) = %q, want %q", tc.sig, got, tc.name)
		}
	}
}

func TestASignalCauseNamesTheSignalAndIsACancellation(t *testing.T) {
	ctx, cancel := context.WithCancelCause(WithDoing(context.Background()))
	if Err(ctx) != nil || FromContext(ctx) != nil {
		t.Fatal("a live context reports an interruption")
	}
	Doing(ctx, "reading %s", "a.yaml")
	cancel(&Signal{Sig: syscall.SIGTERM})
	err := Err(ctx)
	if err == nil || err.Error() != "interrupted by SIGTERM" || !errors.Is(err, context.Canceled) {
		t.Errorf("Err = %v, want interrupted by SIGTERM that is context.Canceled", err)
	}
	if s := FromContext(ctx); s == nil || s.Sig != syscall.SIGTERM {
		t.Errorf("FromContext = %v", s)
	}
	if got := Describe(ctx); got != "reading a.yaml" {
		t.Errorf("Describe = %q", got)
	}
	plain, stop := context.WithCancel(context.Background())
	stop()
	if Err(plain) != context.Canceled || FromContext(plain) != nil || Describe(plain) != "" {
		t.Error("a plain cancellation reads as a signal")
	}
}
