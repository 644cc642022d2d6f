package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNodeOverlayChangesThePlan runs explain -f on a NodePool that allows
// m5, m6a and m7i, with and without a Karpenter NodeOverlay that makes m5
// 30% cheaper (a negotiated price): without it the plan takes the
// catalog's cheapest family, with it m5 at 70% of the catalog price, and
// explain says which overlay adjusted how many types.
func TestNodeOverlayChangesThePlan(t *testing.T) {
	type node struct {
		InstanceType string  `json:"instanceType"`
		Price        float64 `json:"pricePerHour"`
	}
	run := func(files ...string) ([]node, string) {
		t.Helper()
		args := []string{"explain", "-o", "json"}
		for _, f := range files {
			args = append(args, "-f", "testdata/nodeoverlay/"+f)
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("explain %v: %v\n%s", files, err, stderr.String())
		}
		var out struct {
			Nodes []node `json:"nodes"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("explain -o json: %v\n%s", err, stdout.String())
		}
		if len(out.Nodes) == 0 {
			t.Fatalf("explain %v planned no node\n%s", files, stderr.String())
		}
		return out.Nodes, stderr.String()
	}
	before, _ := run("pool.yaml")
	if typ := before[0].InstanceType; strings.HasPrefix(typ, "m5.") {
		t.Fatalf("without the overlay the plan already takes %s; the test needs another family to be cheapest", typ)
	}
	after, stderr := run("pool.yaml", "m5-30-percent-off.yaml")
	for _, n := range after {
		if !strings.HasPrefix(n.InstanceType, "m5.") {
			t.Errorf("with the overlay the plan takes %s, want m5", n.InstanceType)
		}
	}
	var total float64
	for _, n := range after {
		total += n.Price
	}
	var was float64
	for _, n := range before {
		was += n.Price
	}
	if total >= was {
		t.Errorf("plan with the overlay costs $%.4f/h, not less than $%.4f/h without", total, was)
	}
	// m5.2xlarge lists at $0.384/h on demand in us-east-1: 30% off is $0.2688.
	if len(after) == 1 && after[0].InstanceType == "m5.2xlarge" && math.Abs(after[0].Price-0.2688) > 1e-9 {
		t.Errorf("m5.2xlarge priced $%v/h, want $0.2688 (70%% of $0.384)", after[0].Price)
	}
	if want := "prices adjusted by NodeOverlay m5-savings-plan (-30%) for "; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
}
