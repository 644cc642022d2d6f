// Command karpenter runs Karpenter v1.14.1's controllers — provisioning,
// disruption (consolidation, drift, expiry), node-claim lifecycle, garbage
// collection — with Karpenter's own kwok cloud provider
// (sigs.k8s.io/karpenter/kwok/cloudprovider), out of cluster, against the
// API server its KUBECONFIG names. It is the Karpenter side of the live
// benchmark (the parent directory); it is wired here rather than run from
// Karpenter's kwok/main.go so that a bad instance-types file stops it at
// once instead of leaving it running with no instance types.
//
// Configuration is Karpenter's own: flags or environment variables of
// sigs.k8s.io/karpenter/pkg/operator/options and kwok/options, notably
// INSTANCE_TYPES_FILE_PATH (required here), DISABLE_LEADER_ELECTION,
// METRICS_PORT and HEALTH_PROBE_PORT.
package main

import (
	"fmt"
	"os"

	kwokcloud "sigs.k8s.io/karpenter/kwok/cloudprovider"
	kwokoptions "sigs.k8s.io/karpenter/kwok/options"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

func main() {
	// NewOperator parses the flags and environment of every registered
	// options package (kwok/options registers itself on import).
	ctx, op := operator.NewOperator()
	if o := kwokoptions.FromContext(ctx); o == nil || o.InstanceTypesFilePath == "" {
		fmt.Fprintln(os.Stderr, "karpenter: set INSTANCE_TYPES_FILE_PATH (or --instance-types-file-path) to the benchmark's shared instance types")
		os.Exit(2)
	}
	types, err := kwokcloud.ConstructInstanceTypes(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "karpenter: reading the instance types: %v\n", err)
		os.Exit(1)
	}
	if len(types) == 0 {
		fmt.Fprintln(os.Stderr, "karpenter: the instance-types file lists no instance types")
		os.Exit(1)
	}
	// The kwok provider, decorated with NodeOverlay support as Karpenter's
	// own providers are; the undecorated one is what Karpenter's
	// controllers that must see raw instance types are given.
	raw := kwokcloud.NewCloudProvider(ctx, op.GetClient(), types)
	provider := overlay.Decorate(raw, op.GetClient(), op.InstanceTypeStore)
	cluster := state.NewCluster(op.Clock, op.GetClient(), provider)
	op.WithControllers(ctx, controllers.NewControllers(ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder,
		provider, raw, cluster, op.InstanceTypeStore)...).Start(ctx)
}
