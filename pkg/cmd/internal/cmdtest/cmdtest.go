// Package cmdtest holds what the commands' tests share.
package cmdtest

import (
	"strings"
	"testing"
)

// WantErr checks the error a command returned against want, a part of
// the error the test case expects, or "" for none. It stops t when they
// disagree, and reports whether the command failed as wanted: the case
// then has no output to check.
func WantErr(t testing.TB, err error, want string) (failed bool) {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatalf("error: %v", err)
	}
	return false
}
