package explain

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// TestOfflineDefaultsSaidAsExplainSaysThem checks that manifests with no
// NodePool and no DaemonSets get, in the TUI's detail view, the lines
// explain prints for the default pool and the EKS DaemonSets planned for
// them, word for word, and only those that apply.
func TestOfflineDefaultsSaidAsExplainSaysThem(t *testing.T) {
	const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: web, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
`
	f := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(f, []byte(deployment), 0o644); err != nil {
		t.Fatal(err)
	}
	input := snapshot.Input{Filenames: []string{f}}
	tests := []struct {
		name    string
		def     plan.DefaultPool
		notices int
	}{
		{"pool and DaemonSets", plan.DefaultPool{}, 2},
		{"pool only", plan.DefaultPool{NoEKSDaemonSets: true}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := Options{Input: input, Default: tc.def, IOStreams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}}
			if err := o.Run(context.Background()); err != nil {
				t.Fatalf("explain: %v\n%s", err, errOut.String())
			}
			m, err := input.Read(nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := report.NewPlanner().Build(report.Input{Manifests: m, Default: tc.def})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Pending) != 1 {
				t.Fatalf("pending groups %+v, want one", r.Pending)
			}
			explained := strings.Split(out.String(), "\n")
			detail := r.Detail(&r.Pending[0])
			notices := r.Notices()
			if len(notices) != tc.notices {
				t.Errorf("notices %q, want %d", notices, tc.notices)
			}
			for _, n := range notices {
				if !slices.Contains(explained, n) {
					t.Errorf("explain does not print %q:\n%s", n, out.String())
				}
				if !slices.Contains(detail, n) {
					t.Errorf("the detail view does not show %q:\n%s", n, strings.Join(detail, "\n"))
				}
			}
		})
	}
}
