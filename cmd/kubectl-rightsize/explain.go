package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
)

const explainExample = `  # Why are pods pending in the current namespace, what would fix it, and what do the nodes cost?
  kubectl rightsize explain

  # The same for every namespace, or for one workload
  kubectl rightsize explain -A
  kubectl rightsize explain deployment/web -n shop

  # Plan nodes for a directory of manifests with the embedded AWS catalog, offline
  kubectl rightsize explain -f deploy/

  # The same in eu-west-1, allowing spot, one row per node with its pods
  kubectl rightsize explain -f app.yaml --region eu-west-1 --capacity-type spot,on-demand -o wide

  # Your own instance types and prices, output as JSON
  kubectl rightsize explain -f app.yaml --instance-types my-types.yaml -o json`

// NewCmdExplain builds `kubectl rightsize explain`. cluster gives the
// kubeconfig flags of the root command.
func NewCmdExplain(streams genericiooptions.IOStreams, cluster genericclioptions.RESTClientGetter) *cobra.Command {
	o := &explain.Options{IOStreams: streams, Cluster: cluster}
	cmd := &cobra.Command{
		Use:   "explain [POD | TYPE/NAME] [-f FILENAME]",
		Short: "Show why pods are pending, which right-sized nodes would fix it, what they cost, and what the current nodes cost",
		Long: `Show why pods are pending, which right-sized nodes would fix it and what they cost.

Without -f, explain reads the cluster of the current kubeconfig context: pending
pods (of the current namespace, -n NAMESPACE, or -A for all), nodes, DaemonSets,
PodDisruptionBudgets and Karpenter NodePools. It plans for every pending pod,
then reports the pending pods in scope with the scheduler's message and the
node that would take them, the proposed nodes, and the current nodes with their
price. Naming a pod or a workload (deployment/web) narrows the report to it.

With -f, explain plans offline for the workloads in the manifests.`,
		Example: explainExample,
		Args:    cobra.ArbitraryArgs, // Complete says what is wrong with extra ones
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.Filenames, "filename", "f", nil, "manifests to plan for, offline: a file, a directory, or - for stdin (repeatable)")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "report the pending pods of every namespace")
	f.BoolVar(&o.Consolidation, "consolidation", false, "also show what consolidation would do now and what it would save (read-only)")
	f.StringVarP(&o.Output, "output", "o", "", "output format: wide, json or yaml")
	f.StringVar(&o.Catalog.Region, "region", "", "AWS region whose instance types and prices to use (default: the nodes' topology.kubernetes.io/region, else "+explain.DefaultRegion+")")
	f.StringVar(&o.Catalog.InstanceTypesFile, "instance-types", "", "YAML or JSON file of instance types and offerings that replaces the embedded catalog")
	f.Float64Var(&o.Catalog.Model.VMMemoryOverheadPercent, "vm-memory-overhead-percent", 0.075, "share of advertised memory the hypervisor keeps")
	f.Int64Var(&o.Catalog.Model.MaxPods, "max-pods", 110, "cap on the ENI-limited pods per node")
	f.StringSliceVar(&o.Default.CapacityTypes, "capacity-type", []string{"on-demand"}, "capacity types of the default NodePool (on-demand, spot), used when there is no NodePool")
	f.StringSliceVar(&o.Default.InstanceFamilies, "instance-family", nil, "instance families of the default NodePool (e.g. m7i,c7i); all when empty")
	f.DurationVar(&o.Timeout, "timeout", 0, "stop improving the plan after this long and print the best found (0: no limit)")
	return cmd
}
