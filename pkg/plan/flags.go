package plan

import (
	"fmt"

	"github.com/spf13/pflag"
)

// AddFlags binds the catalog flags of explain and tui to c and sets their
// defaults: the instance types and prices to plan with (--region,
// --instance-types) and how capacity is derived (--vm-memory-overhead-percent,
// --max-pods). MaxInputSize is not a flag of its own: the command gives
// it --max-input-size's value.
func (c *Catalog) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Region, "region", "", "AWS region whose instance types and prices to use (default: the nodes' topology.kubernetes.io/region, else "+DefaultRegion+")")
	fs.StringVar(&c.InstanceTypesFile, "instance-types", "", "YAML or JSON file of instance types and offerings that replaces the embedded catalog")
	fs.Float64Var(&c.Model.VMMemoryOverheadPercent, "vm-memory-overhead-percent", 0.075, "share of advertised memory the hypervisor keeps")
	fs.Int64Var(&c.Model.MaxPods, "max-pods", 110, "cap on the ENI-limited pods per node")
}

// Validate checks the catalog flags before anything is read.
func (c *Catalog) Validate() error {
	if v := c.Model.VMMemoryOverheadPercent; v < 0 || v >= 1 {
		return fmt.Errorf("--vm-memory-overhead-percent %v: must be at least 0 and below 1", v)
	}
	if c.Model.MaxPods < 0 {
		return fmt.Errorf("--max-pods %d: must not be negative", c.Model.MaxPods)
	}
	return nil
}

// AddFlags binds the default NodePool's flags of explain and tui to d and
// sets their defaults: what to plan for when the input has no NodePool
// (--capacity-type, --instance-family, --arch, --all-instance-types) and
// no DaemonSets (--no-eks-daemonsets).
func (d *DefaultPool) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&d.CapacityTypes, "capacity-type", []string{"on-demand"}, "capacity types of the default NodePool (on-demand, spot), used when there is no NodePool")
	fs.StringSliceVar(&d.InstanceFamilies, "instance-family", nil, "instance families of the default NodePool (e.g. m7i,c7g), in place of its instance categories c, m, r of generation > 2")
	fs.StringSliceVar(&d.Architectures, "arch", nil, "CPU architectures of the default NodePool (amd64, arm64; repeatable or comma-separated); amd64 when empty, every architecture when empty with --all-instance-types or --instance-family")
	fs.BoolVar(&d.AllInstanceTypes, "all-instance-types", false, "let the default NodePool use every instance type of the catalog (every category, generation and architecture, burstable types included), not only Karpenter's general-purpose c, m, r")
	fs.BoolVar(&d.NoEKSDaemonSets, "no-eks-daemonsets", false, "plan manifests that have no DaemonSets without the ones EKS runs on every node (aws-node, kube-proxy, eks-pod-identity-agent)")
}
