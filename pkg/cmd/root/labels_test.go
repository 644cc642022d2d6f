package root

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
)

// TestExplainLabelsAndResources runs `explain -f` on a manifest whose pool
// pins a zone by template label and leaves a custom label open (team In
// [a, b]), with workloads selecting a team and a deprecated arch key,
// binding a host port, asking for AMD GPUs and Neuron cores, and selecting
// a label the catalog does not know.
func TestExplainLabelsAndResources(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	cmd := NewCmdRoot(streams, version.Info{})
	cmd.SetArgs([]string{"explain", "-f", "testdata/labels/pools.yaml", "--region", "us-east-1", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("explain: %v", err)
	}
	var plan struct {
		Nodes []struct {
			InstanceType, Zone string
			Pods               []string
			Labels             map[string]string
		} `json:"nodes"`
		Unschedulable []struct{ Pod, Reason string } `json:"unschedulable"`
	}
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	nodeOf := map[string]int{}    // pod → node index
	typeOf := map[string]string{} // workload → instance type
	perNode := map[string][]int{} // workload → its pods per node
	for i, n := range plan.Nodes {
		if n.Zone != "us-east-1b" {
			t.Errorf("node %d (%s) in %s, want us-east-1b (the pool's template label)", i, n.InstanceType, n.Zone)
		}
		counts := map[string]int{}
		for _, p := range n.Pods {
			nodeOf[p] = i
			w := strings.TrimPrefix(p[:strings.LastIndex(p, "-")], "default/")
			counts[w]++
			typeOf[w] = n.InstanceType
		}
		for w, c := range counts {
			perNode[w] = append(perNode[w], c)
		}
	}
	for _, p := range []string{"default/team-b-0", "default/team-b-1"} {
		i, ok := nodeOf[p]
		if !ok {
			t.Errorf("%s not placed (team In [a, b] offers b; beta.kubernetes.io/arch reads kubernetes.io/arch)", p)
		} else if got := plan.Nodes[i].Labels["team"]; got != "b" {
			t.Errorf("%s's node has label team=%q in -o json, want the value the plan chose, b", p, got)
		}
	}
	if got := perNode["ingress"]; len(got) != 3 {
		t.Errorf("ingress pods per node %v, want 1 on each of 3 nodes (hostPort 80)", got)
	}
	if got := typeOf["rocm"]; !strings.HasPrefix(got, "g4ad.") {
		t.Errorf("amd.com/gpu pod on %q, want a g4ad type", got)
	}
	if got := typeOf["neuron"]; !strings.HasPrefix(got, "inf") && !strings.HasPrefix(got, "trn") {
		t.Errorf("aws.amazon.com/neuroncore pod on %q, want an Inferentia or Trainium type", got)
	}
	found := false
	for _, u := range plan.Unschedulable {
		if u.Pod == "default/nitro-only-0" {
			found = true
			if !strings.Contains(u.Reason, "the catalog does not know label karpenter.k8s.aws/instance-hypervisor") || strings.Contains(u.Reason, "room") {
				t.Errorf("nitro-only reason %q, want one naming the unknown label", u.Reason)
			}
		} else {
			t.Errorf("%s unschedulable: %s", u.Pod, u.Reason)
		}
	}
	if !found {
		t.Error("nitro-only was placed; the catalog cannot know the hypervisor")
	}
}
