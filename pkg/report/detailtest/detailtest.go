// Package detailtest reads the TUI's detail view (report.Report.Detail)
// and explain's unschedulable sentence pool by pool, for the tests that
// check the two agree (pkg/tui/report and test/conformance). It reads
// rendered text only, as a user does, and imports nothing of either.
package detailtest

import (
	"regexp"
	"strings"
)

// Verdicts a pool gets for a pod, from the detail view or the sentence.
const (
	Taint    = "taint"     // the pool's taint is not tolerated
	NoType   = "no type"   // the pool's requirements allow no instance type
	Selector = "selector"  // no allowed type matches the pod's selectors
	TooSmall = "too small" // every matching type is too small
	Fits     = "fits"      // some type fits
	Unknown  = "?"
)

var poolHeader = regexp.MustCompile(`^NodePool (\S+) \(weight`)

// Blocks splits the detail view's lines into each pool's block, by pool
// name, and returns the pools in the order shown.
func Blocks(lines []string) (blocks map[string][]string, order []string) {
	blocks = map[string][]string{}
	cur := ""
	for _, l := range lines {
		if m := poolHeader.FindStringSubmatch(l); m != nil {
			cur = m[1]
			order = append(order, cur)
		} else if l == "" {
			cur = ""
		}
		if cur != "" {
			blocks[cur] = append(blocks[cur], l)
		}
	}
	return blocks, order
}

// ViewVerdict reads a pool's verdict from its block of the detail view,
// from the lines that group the instance types, not from the quoted
// sentence.
func ViewVerdict(block []string) string {
	has := func(s string) bool {
		for _, l := range block {
			if strings.Contains(l, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("is not tolerated: every type ruled out"):
		return Taint
	case has("type(s) fit; cheapest"):
		return Fits
	case has("type(s) too small for"):
		return TooSmall
	case has("ruled out by the pod's"):
		return Selector
	case has("ruled out by the pool's requirement"):
		return NoType
	}
	return Unknown
}

// SentenceVerdict reads the verdict the unschedulable sentence explain
// prints gives pool: Fits when the sentence says nothing against it.
func SentenceVerdict(reason, pool string) string {
	q := regexp.QuoteMeta(pool)
	for _, c := range []struct{ verdict, pattern string }{
		{Taint, `NodePool ` + q + ` has taint`},
		{NoType, `NodePool ` + q + ` (allows no instance type|requires )`},
		{Selector, `allowed by NodePool ` + q + ` matches the pod's`},
		{TooSmall, `allowed by NodePool ` + q + ` (\([^)]*\) )?ha(s|ve) room for`},
		// Too small in a resource none of the types has at all (a GPU).
		{TooSmall, `allowed by NodePool ` + q + ` has \S+( or \S+)*, which the pod requests`},
	} {
		if regexp.MustCompile(c.pattern).MatchString(reason) {
			return c.verdict
		}
	}
	return Fits
}
