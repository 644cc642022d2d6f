package catalog_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Expected values are what Karpenter's AWS provider gives these types
// (pkg/providers/instancetype/types.go: computeCapacity and
// computeRequirements), from AWS's published shapes.
func TestCatalogAcceleratorsAndKarpenterLabels(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		typ string
		// nvidia is the nvidia.com/gpu capacity; extended the other
		// accelerator resources; labels must all be set as given ("" = absent).
		nvidia   int64
		extended map[string]int64
		labels   map[string]string
	}{
		{"g4ad.xlarge", 0, map[string]int64{cloud.ResourceAMDGPU: 1}, map[string]string{
			cloud.LabelInstanceGPUMaker: "amd", cloud.LabelInstanceGPUCount: "1", cloud.LabelInstanceGPUMemory: "8192", cloud.LabelCPUManufacturer: "amd",
		}},
		{"p4d.24xlarge", 8, nil, map[string]string{
			cloud.LabelInstanceGPUMaker: "nvidia", cloud.LabelInstanceGPUName: "a100", cloud.LabelInstanceGPUMemory: "40960", cloud.LabelLocalNVMe: "8000",
		}},
		{"inf2.xlarge", 0, map[string]int64{cloud.ResourceAWSNeuron: 1, cloud.ResourceAWSNeuronCore: 2}, map[string]string{
			cloud.LabelAcceleratorName: "inferentia2", cloud.LabelAcceleratorMaker: "aws", cloud.LabelAcceleratorCount: "1", cloud.LabelInstanceGPUCount: "",
		}},
		{"trn1.32xlarge", 0, map[string]int64{cloud.ResourceAWSNeuron: 16, cloud.ResourceAWSNeuronCore: 32}, map[string]string{
			cloud.LabelAcceleratorName: "trainium", cloud.LabelAcceleratorCount: "16",
		}},
		{"m5d.large", 0, nil, map[string]string{
			cloud.LabelCPUManufacturer: "intel", cloud.LabelLocalNVMe: "75", cloud.LabelNetworkBandwidth: "750", cloud.LabelEBSBandwidth: "4750",
			cloud.LabelCapabilityFlex: "false", cloud.LabelInstanceFamily: "m5d", cloud.LabelInstanceSize: "large", cloud.LabelInstanceCategory: "m",
			cloud.LabelInstanceGen: "5", cloud.LabelInstanceCPU: "2", cloud.LabelInstanceMemory: "8192", corev1.LabelInstanceTypeStable: "m5d.large",
			cloud.LabelArch: "amd64", cloud.LabelOS: "linux",
		}},
		{"c7g.large", 0, nil, map[string]string{cloud.LabelCPUManufacturer: "aws", cloud.LabelArch: "arm64", cloud.LabelLocalNVMe: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			it, ok := cat.Lookup(tt.typ)
			if !ok {
				t.Fatalf("%s not in the catalog", tt.typ)
			}
			st := cloud.NodeModel{}.SolverType(&it, "us-east-1")
			if got := st.Capacity[solver.GPU]; got != tt.nvidia {
				t.Errorf("nvidia.com/gpu = %d, want %d", got, tt.nvidia)
			}
			if len(st.Extended) != len(tt.extended) {
				t.Errorf("extended = %v, want %v", st.Extended, tt.extended)
			}
			for name, want := range tt.extended {
				if got := st.Extended[name]; got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
			for key, want := range tt.labels {
				if got, ok := st.Labels[key]; got != want || ok != (want != "") {
					t.Errorf("label %s = %q (set %v), want %q", key, got, ok, want)
				}
			}
		})
	}
}
