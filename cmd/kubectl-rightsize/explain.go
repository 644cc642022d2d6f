package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
)

const explainExample = `  # Plan nodes for a directory of manifests with the embedded AWS catalog
  kubectl rightsize explain -f deploy/

  # The same in eu-west-1, allowing spot, one row per node with its pods
  kubectl rightsize explain -f app.yaml --region eu-west-1 --capacity-type spot,on-demand -o wide

  # Your own instance types and prices, output as JSON
  kubectl rightsize explain -f app.yaml --instance-types my-types.yaml -o json`

// NewCmdExplain builds `kubectl rightsize explain`.
func NewCmdExplain(streams genericiooptions.IOStreams) *cobra.Command {
	o := &explain.Options{IOStreams: streams}
	cmd := &cobra.Command{
		Use:     "explain -f FILENAME",
		Short:   "Show which right-sized nodes your workloads need, what they cost, and why pods cannot be placed",
		Example: explainExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.Filenames, "filename", "f", nil, "manifests to plan for: a file, a directory, or - for stdin (repeatable)")
	f.StringVarP(&o.Output, "output", "o", "", "output format: wide, json or yaml")
	f.StringVar(&o.Catalog.Region, "region", "us-east-1", "AWS region whose instance types and prices to use")
	f.StringVar(&o.Catalog.InstanceTypesFile, "instance-types", "", "YAML or JSON file of instance types and offerings that replaces the embedded catalog")
	f.Float64Var(&o.Catalog.Model.VMMemoryOverheadPercent, "vm-memory-overhead-percent", 0.075, "share of advertised memory the hypervisor keeps")
	f.Int64Var(&o.Catalog.Model.MaxPods, "max-pods", 110, "cap on the ENI-limited pods per node")
	f.StringSliceVar(&o.Default.CapacityTypes, "capacity-type", []string{"on-demand"}, "capacity types of the default NodePool (on-demand, spot), used when the input defines no NodePool")
	f.StringSliceVar(&o.Default.InstanceFamilies, "instance-family", nil, "instance families of the default NodePool (e.g. m7i,c7i); all when empty")
	f.DurationVar(&o.Timeout, "timeout", 0, "stop improving the plan after this long and print the best found (0: no limit)")
	return cmd
}
