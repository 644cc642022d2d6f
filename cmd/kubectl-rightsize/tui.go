package main

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/cloudprovider"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui"
)

const tuiExample = `  # Pending pods, proposed nodes, current nodes and consolidation of the current cluster
  kubectl rightsize tui

  # Look, never touch: no selecting, no launching
  kubectl rightsize tui --read-only

  # No operator in the cluster: launch simulated (kwok) nodes from the screen
  kubectl rightsize tui --cloud sim

  # What-if on manifests, offline: toggle spot (c), families (f) and region (r) on screen
  kubectl rightsize tui -f deploy/`

// NewCmdTUI builds `kubectl rightsize tui`. cluster gives the kubeconfig
// flags of the root command.
func NewCmdTUI(streams genericiooptions.IOStreams, cluster genericclioptions.RESTClientGetter) *cobra.Command {
	o := &tui.CmdOptions{IOStreams: streams, Cluster: cluster, OperatorLease: operator.DefaultLeaderElectionID}
	o.NewCloud = func(ctx context.Context, region string, cfg *rest.Config, c client.Client) (cloud.CloudProvider, error) {
		co := cloudprovider.Options{
			Cloud: o.Cloud, ClusterName: o.ClusterName, Region: region,
			InstanceTypesFile: o.Catalog.InstanceTypesFile, Model: o.Catalog.Model, Logger: logr.Discard(),
		}
		return cloudprovider.New(ctx, co, cfg, c)
	}
	cmd := &cobra.Command{
		Use:   "tui [-f FILENAME]",
		Short: "Interactive: why pods are pending, the right-sized nodes that would fix it and their cost; launch them from the screen",
		Long: `An interactive view of the same plan explain prints, kept up to date as the cluster changes.

Views (1-4 or tab): pending pods grouped by owner with the scheduler's message,
our reason and the node that would take them (enter: every constraint checked and
the instance types ruled out); the proposed nodes with price and utilisation and
the plan's cost against the lower bound; the current nodes with CPU and memory
bars, price and NodeClaims in flight; and what consolidation would save.

Select proposed nodes with space and press L to launch them: after a confirmation
showing what will be created and its cost, NodeClaims are created for the
operator to launch. With --cloud sim|aws and no operator running, the TUI
launches the instances itself through that cloud provider, for NodeClaims built
as the operator builds them (created in the cluster too when the CRDs and the
NodePool exist, so that an operator started later adopts the instances), and
opens the nodes to pods once they are Ready; progress shows in place until the
pods run. --read-only removes every action. With -f it works offline on
manifests; c, f and r re-plan with spot, other instance families or another
region and show the cost difference. Press ? for every key.`,
		Example: tuiExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.Filenames, "filename", "f", nil, "manifests to plan for, offline: a file or a directory (repeatable)")
	f.BoolVar(&o.ReadOnly, "read-only", false, "show only: no selecting or launching")
	f.StringVar(&o.Cloud, "cloud", "", "launch through this cloud provider directly when no operator runs: sim (kwok nodes) or aws")
	f.StringVar(&o.ClusterName, "cluster-name", "rightsize", "with --cloud: the cluster name instances are tagged with; the operator's --cluster-name, so that it adopts them")
	f.StringVar(&o.Catalog.Region, "region", "", "AWS region whose instance types and prices to use (default: the nodes' topology.kubernetes.io/region, else "+explain.DefaultRegion+")")
	f.StringVar(&o.Catalog.InstanceTypesFile, "instance-types", "", "YAML or JSON file of instance types and offerings that replaces the embedded catalog")
	f.Float64Var(&o.Catalog.Model.VMMemoryOverheadPercent, "vm-memory-overhead-percent", 0.075, "share of advertised memory the hypervisor keeps")
	f.Int64Var(&o.Catalog.Model.MaxPods, "max-pods", 110, "cap on the ENI-limited pods per node")
	f.StringSliceVar(&o.Default.CapacityTypes, "capacity-type", []string{"on-demand"}, "capacity types of the default NodePool (on-demand, spot), used when there is no NodePool")
	f.StringSliceVar(&o.Default.InstanceFamilies, "instance-family", nil, "instance families of the default NodePool (e.g. m7i,c7i); all when empty")
	f.DurationVar(&o.Timeout, "timeout", tui.DefaultTimeout, "stop improving each re-plan after this long and show the best found")
	return cmd
}
