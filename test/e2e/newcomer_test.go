package e2e

import (
	"fmt"
	"os"
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

// TestARequestAboveItsLimitIsRefused feeds explain a Deployment whose
// container requests more CPU than its limit, which the API server
// refuses: explain once planned a node for its pods; now it names the
// field, as for a negative request, and exits 1.
func TestARequestAboveItsLimitIsRefused(t *testing.T) {
	dir := t.TempDir()
	manifest := webDeployment(3, `{requests: {cpu: "1"}, limits: {cpu: 500m}}`)
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	r := plugin(t, "/nonexistent", "explain", "-f", filepath.Join(dir, "web.yaml"))
	want := `Deployment "web": spec.template.spec.containers[0].resources.requests.cpu: 1 is above the limit of 500m; the API server refuses such a pod`
	if r.err == nil || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "TOTAL") {
		t.Errorf("explain: %v, want exit 1 with %q and no plan\nstdout:\n%s\nstderr:\n%s", r.err, want, r.stdout, r.stderr)
	}
}

// webDeployment is the manifest of a Deployment "web" of replicas pods
// with one container, whose resources are resources (a YAML flow
// mapping, e.g. `{requests: {cpu: "1"}}`).
func webDeployment(replicas int, resources string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: web
        resources: %s
`, replicas, resources)
}
