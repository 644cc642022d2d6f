package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOneNodeRowAndTotalCostTheSamePerMonth runs explain -f on the
// guestbook (one node) and checks that the node's row and the TOTAL row
// print the same monthly price: $0.0765/h is $55.845 a month, and the row
// once printed 55.84 above a TOTAL of 55.85.
func TestOneNodeRowAndTotalCostTheSamePerMonth(t *testing.T) {
	r := plugin(t, "/nonexistent", "explain", "-f", filepath.Join("testdata", "public", "guestbook"))
	if r.err != nil {
		t.Fatalf("explain: %v\n%s", r.err, r.stderr)
	}
	var rows [][]string
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[0] == "default" || f[0] == "TOTAL") {
			rows = append(rows, f)
		}
	}
	if len(rows) != 2 || rows[0][len(rows[0])-4] != "1" {
		t.Fatalf("want one node's row and the TOTAL:\n%s", r.stdout)
	}
	node, total := rows[0], rows[1]
	if node[len(node)-1] != total[len(total)-1] || node[len(node)-2] != total[len(total)-2] {
		t.Errorf("one node at %s $/h %s $/month, TOTAL %s $/h %s $/month:\n%s",
			node[len(node)-2], node[len(node)-1], total[len(total)-2], total[len(total)-1], r.stdout)
	}
}
