package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestPortClashIsReadBeforeTheLogGoes: a component that lost its port to
// another process is retried by New; whether it did is read from its log,
// which Stop removes with the Env's directory, so it is recorded first.
func TestPortClashIsReadBeforeTheLogGoes(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`E1207 16:58:04.802037 run.go:72] "command failed" err="failed to create listener: failed to listen on 127.0.0.1:37705: listen tcp 127.0.0.1:37705: bind: address already in use"`, true},
		{`E1207 16:58:04.802037 run.go:72] "command failed" err="open /nonexistent/ca.crt: no such file or directory"`, false},
	} {
		dir := t.TempDir()
		log := filepath.Join(dir, "kube-apiserver.log")
		if err := os.WriteFile(log, []byte("I1207 flags.go:64] FLAG: --v=\"1\"\n"+tc.line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		early := &exitedError{name: "kube-apiserver", logPath: log, err: errors.New("exit status 1")}
		err := fmt.Errorf("%w\nlogs", early)
		markClash(err)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		var got *exitedError
		if !errors.As(err, &got) || got.clash != tc.want {
			t.Errorf("%q: clash %v, want %v", tc.line, got != nil && got.clash, tc.want)
		}
	}
}
