package importer

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// normalizeDuration rewrites a Karpenter duration (a Go duration, or Never
// when never is allowed) in whole hours, minutes and seconds ("1h30m",
// "720h", "45s"), the form the CRDs accept.
func normalizeDuration(path, s string, never bool) (string, error) {
	if s == "Never" {
		if !never {
			return "", fmt.Errorf("%s: Never is not allowed here", path)
		}
		return s, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return "", fmt.Errorf("%s: want a duration such as 720h, got %q", path, s)
	}
	if d%time.Second != 0 {
		return "", fmt.Errorf("%s: %s is not a whole number of seconds", path, s)
	}
	if d == 0 {
		return "0s", nil
	}
	var b strings.Builder
	h, m, sec := d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second
	for _, part := range []struct {
		n    time.Duration
		unit string
	}{{h, "h"}, {m, "m"}, {sec, "s"}} {
		if part.n > 0 {
			b.WriteString(strconv.FormatInt(int64(part.n), 10) + part.unit)
		}
	}
	return b.String(), nil
}

// seconds formats a count of seconds as a duration.
func seconds(n int64) string { return strconv.FormatInt(n, 10) + "s" }

// mustNormalize is normalizeDuration for messages: the input when it fails.
func mustNormalize(s string) string {
	if v, err := normalizeDuration("", s, true); err == nil {
		return v
	}
	return s
}
