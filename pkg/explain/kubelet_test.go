package explain

import (
	"encoding/json"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"path/filepath"
	"testing"
)

// TestExplainHonoursKubeletMaxPods plans 20 small pods for one pool of
// m5.large (29 pods by the ENI rule, room for all 20) with the pool's
// kubelet settings in each place Karpenter has kept them: maxPods 8 must
// give 4 nodes of at most 5 pods where no settings give 1 (the input has
// no DaemonSets, so the 3 EKS runs on every node take 3 of each node's
// pod slots).
func TestExplainHonoursKubeletMaxPods(t *testing.T) {
	const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 20
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 50m, memory: 64Mi}}}]
`
	const requirements = `
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`
	class := func(kubelet string) string {
		return `
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: web}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: node
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
` + kubelet
	}
	v1Pool := `
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: web}` + requirements
	tests := []struct {
		name      string
		manifests string
		nodes     int
		maxPods   int
	}{
		{"no kubelet settings", v1Pool + class(""), 1, 20},
		{"v1 EC2NodeClass spec.kubelet", v1Pool + class("  kubelet: {maxPods: 8}\n"), 4, 5},
		{"v1 EC2NodeClass podsPerCore", v1Pool + class("  kubelet: {podsPerCore: 3}\n"), 7, 3},
		{"v1beta1 NodePool template kubelet", `
---
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: web}
      kubelet: {maxPods: 8}` + requirements + class(""), 4, 5},
		{"v1alpha5 Provisioner kubeletConfiguration", `
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: web}
spec:
  kubeletConfiguration: {maxPods: 8, containerRuntime: containerd}
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`, 4, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "in.yaml")
			writeFile(t, f, deployment+tc.manifests)
			out, errOut, err := run(t, Options{Input: snapshot.Input{Filenames: []string{f}}, Output: "json"})
			if err != nil {
				t.Fatalf("explain: %v\n%s", err, errOut)
			}
			var got struct {
				Nodes []struct {
					InstanceType string
					Pods         []string
					Allocatable  map[string]string
				} `json:"nodes"`
				Unschedulable []any `json:"unschedulable"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Nodes) != tc.nodes || len(got.Unschedulable) != 0 {
				t.Fatalf("%d nodes, %d unschedulable; want %d nodes and none\n%s%s", len(got.Nodes), len(got.Unschedulable), tc.nodes, out, errOut)
			}
			placed := 0
			for _, n := range got.Nodes {
				placed += len(n.Pods)
				if len(n.Pods) > tc.maxPods {
					t.Errorf("node %s has %d pods, want at most %d", n.InstanceType, len(n.Pods), tc.maxPods)
				}
			}
			if placed != 20 {
				t.Errorf("%d pods placed, want 20", placed)
			}
		})
	}
}
