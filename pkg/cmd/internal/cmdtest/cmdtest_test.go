package cmdtest

import (
	"errors"
	"testing"
)

// recorder is a testing.TB that records whether it was stopped.
type recorder struct {
	testing.TB
	fatal bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.fatal = true }

func TestWantErr(t *testing.T) {
	boom := errors.New("cannot list nodes: boom")
	for _, tc := range []struct {
		name        string
		err         error
		want        string
		failed, bad bool
	}{
		{"the error wanted", boom, "cannot list nodes", true, false},
		{"another error", boom, "cannot list pods", true, true},
		{"no error where one is wanted", nil, "cannot list nodes", true, true},
		{"an error where none is wanted", boom, "", false, true},
		{"none, as wanted", nil, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			failed := WantErr(r, tc.err, tc.want)
			if r.fatal != tc.bad || (!r.fatal && failed != tc.failed) {
				t.Errorf("WantErr(%v, %q) = %v, stopped %v; want %v, stopped %v", tc.err, tc.want, failed, r.fatal, tc.failed, tc.bad)
			}
		})
	}
}
