package lifecycle

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/flagvalue"
)

// AddFlags binds the lifecycle flags of `kubectl rightsize operator` to o
// and sets their defaults: how new nodes open to their pods.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.GangWait, "gang-wait", 10*time.Second, "how long a ready node planned for pods with a hard topology spread or required pod affinity waits for the other such nodes of its provisioning decision, so that they open to pods together as planned; other nodes open as soon as they are ready")
	flagvalue.BoolNot(fs, &o.NoNominations, "nominate-pods", true, "when a node opens, set status.nominatedNodeName on the pods planned onto it, so that kube-scheduler keeps their room there and places them as planned; false leaves placement to the scheduler, as Karpenter does (pods bind sooner; the scheduler scatters them and consolidation moves them)")
	flagvalue.BoolNot(fs, &o.SkipSpreadNominations, "nominate-spread-pods", true, "with --nominate-pods, nominate also the pods with a hard topology spread or required pod affinity; false lets them bind sooner (kube-scheduler counts the pods of a spread nominated to one node against each other) at the price of the scheduler placing them against the plan")
}
