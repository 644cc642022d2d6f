package explain

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
)

// run makes the report of o (flags already validated, as the explain
// command does in pkg/cmd/explaincmd) and returns stdout, stderr and the error.
func run(t *testing.T, o Options) (string, string, error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o.IOStreams = streams
	if o.Catalog.Region == "" && o.Catalog.InstanceTypesFile == "" {
		o.Catalog.Region = "us-east-1"
	}
	err := o.Run(context.Background())
	return out.String(), errOut.String(), err
}

func TestExplainSeedWalkthrough(t *testing.T) {
	out, errOut, err := run(t, Options{Input: snapshot.Input{Filenames: []string{"../snapshot/testdata/seed"}}})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	for _, want := range []string{
		"default/memory-hog-app-0",
		"0 of 3 instance types allowed by NodePool default (c5.xlarge, m5.large, m5.xlarge) have room for 4 CPU and 16Gi memory",
		"the cheapest instance type that would fit, if a NodePool allowed it, is ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "never had EC2NodeClass") {
		t.Errorf("stderr lacks the apiVersion warning:\n%s", errOut)
	}
}

func TestExplainJSONContract(t *testing.T) {
	out, _, err := run(t, Options{Input: snapshot.Input{Filenames: []string{"../../examples/flash-sale.yaml"}}, Output: "json"})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	var got struct {
		Kind  string `json:"kind"`
		Nodes []struct {
			InstanceType, CapacityType, Zone, NodePool string
			PricePerHour                               float64
			Pods                                       []string
		} `json:"nodes"`
		Unschedulable          []struct{ Pod, Reason string } `json:"unschedulable"`
		TotalPricePerHour      float64                        `json:"totalPricePerHour"`
		LowerBoundPricePerHour float64                        `json:"lowerBoundPricePerHour"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if got.Kind != "Plan" || len(got.Nodes) == 0 || got.Unschedulable == nil {
		t.Fatalf("unexpected plan: %+v", got)
	}
	pods, sum := 0, 0.0
	for _, n := range got.Nodes {
		if n.InstanceType == "" || n.Zone == "" || n.NodePool != "default" || n.CapacityType != "on-demand" || n.PricePerHour <= 0 {
			t.Errorf("incomplete node %+v", n)
		}
		for _, p := range n.Pods {
			if !strings.HasPrefix(p, "shop/") {
				t.Errorf("pod %q not namespace/name", p)
			}
		}
		pods += len(n.Pods)
		sum += n.PricePerHour
	}
	// 12 storefront + 6 checkout + 8 session-cache + 3 search + 4 render.
	if pods != 33 {
		t.Errorf("%d pods placed, want 33", pods)
	}
	if d := sum - got.TotalPricePerHour; d > 1e-3 || d < -1e-3 {
		t.Errorf("total %v, nodes sum to %v", got.TotalPricePerHour, sum)
	}
	if got.LowerBoundPricePerHour <= 0 || got.LowerBoundPricePerHour > got.TotalPricePerHour {
		t.Errorf("lower bound %v vs total %v", got.LowerBoundPricePerHour, got.TotalPricePerHour)
	}
}

func TestExplainOutputs(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		want   []string
		errOut string
	}{
		{"table", Options{Output: ""}, []string{"NODEPOOL", "INSTANCE TYPE", "$/MONTH", "TOTAL", "Lower bound"}, ""},
		{"wide lists pods per node", Options{Output: "wide"}, []string{"NODE", "new-1", "shop/storefront-0"}, ""},
		{"yaml", Options{Output: "yaml"}, []string{"kind: Plan", "totalPricePerHour:", "lowerBoundPricePerHour:"}, ""},
		{"default pool and region flags", Options{Output: "", Catalog: plan.Catalog{Region: "eu-west-1"}}, []string{"eu-west-1"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Input.Filenames = []string{"../../examples/flash-sale.yaml"}
			out, _, err := run(t, tc.opts)
			if err != nil {
				t.Fatalf("explain: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestExplainDefaultPoolFlags(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	writeFile(t, app, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: '1', memory: 1Gi}}\n")
	out, _, err := run(t, Options{Input: snapshot.Input{Filenames: []string{app}}, Output: "json", Default: plan.DefaultPool{CapacityTypes: []string{"spot"}, InstanceFamilies: []string{"m7i"}}})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	if !strings.Contains(out, `"instanceType": "m7i.`) || !strings.Contains(out, `"capacityType": "spot"`) {
		t.Errorf("want a spot m7i node:\n%s", out)
	}
}

func TestExplainInstanceTypesFile(t *testing.T) {
	out, _, err := run(t, Options{Input: snapshot.Input{Filenames: []string{"../../examples/flash-sale.yaml"}}, Output: "json", Catalog: plan.Catalog{InstanceTypesFile: "../../examples/instance-types.yaml"}})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	if !strings.Contains(out, "instance types from ../../examples/instance-types.yaml") {
		t.Errorf("source not named:\n%s", out)
	}
}

func TestExplainBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {a: b}}\n  template:\n    spec:\n      containers:\n      - name: c\n        resources: {requests: {cpu: 2 cores}}\n")
	empty := filepath.Join(dir, "empty.yaml")
	writeFile(t, empty, "# nothing\n")
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"bad quantity names the file and line", Options{Input: snapshot.Input{Filenames: []string{bad}}}, "bad.yaml: document 1 (line 1)"},
		{"missing file", Options{Input: snapshot.Input{Filenames: []string{filepath.Join(dir, "nope.yaml")}}}, "nope.yaml"},
		{"empty input", Options{Input: snapshot.Input{Filenames: []string{empty}}}, "no pods or workloads found"},
		{"unknown region", Options{Input: snapshot.Input{Filenames: []string{"../../examples/flash-sale.yaml"}}, Catalog: plan.Catalog{Region: "mars-1"}}, `"mars-1"`},
		{"bad capacity type", Options{Input: snapshot.Input{Filenames: []string{"../snapshot/testdata/seed/03-memory-hog.yaml"}}, Default: plan.DefaultPool{CapacityTypes: []string{"reserved"}}}, `--capacity-type "reserved"`},
		{"neither manifests nor a cluster", Options{}, "neither manifests nor a cluster"},
		{"bad workload", Options{Workload: "service/web", RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}}, `unknown workload type "service"`},
		{"missing instance-types file", Options{Input: snapshot.Input{Filenames: []string{"../snapshot/testdata/seed"}}, Catalog: plan.Catalog{InstanceTypesFile: filepath.Join(dir, "types.yaml")}}, "types.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(t, tc.opts)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
		})
	}
}

func TestExplainRunStopsWhenTheContextEnds(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := Options{Input: snapshot.Input{Filenames: []string{"../../examples/flash-sale.yaml"}}, Catalog: plan.Catalog{Region: "us-east-1"}, IOStreams: streams}
	err := o.Run(ctx)
	// A context ended before the run stops it at its first step: reading.
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "reading ../../examples/flash-sale.yaml") {
		t.Fatalf("error %v, want the read of flash-sale.yaml cancelled", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed a report:\n%s", out.String())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
