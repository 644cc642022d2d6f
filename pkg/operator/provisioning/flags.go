package provisioning

import (
	"time"

	"github.com/spf13/pflag"
)

// AddFlags binds the provisioning flags of `kubectl rightsize operator` to
// o and sets their defaults: batching and flexible launches. Region and
// Model are not flags: they follow the cloud provider's.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.BatchIdle, "batch-idle", time.Second, "close a batch of pending pods once none arrived for this long (the gap grows, up to 4 times, with the gaps before arrivals of pods a controller owns)")
	fs.DurationVar(&o.BatchHold, "batch-hold", 10*time.Second, "keep a batch open beyond --batch-idle, while a workload of its pods is still creating them or its arrivals pause, for at most this long after it opened (never past --batch-max)")
	fs.DurationVar(&o.BatchMax, "batch-max", 2*time.Minute, "close a batch of pending pods after this long regardless; while arrivals keep it open, it decides early every --batch-hold, launching the nodes its plan fills, and plans the rest with the pods after them")
	fs.Float64Var(&o.LaunchPricePremium, "launch-price-premium", -1, "let a NodeClaim allow the instance types and offerings that hold its planned pods at most this fraction above the planned price (0.1: 10%), for the cloud to choose among; negative: no bound, every compatible type up to 60 by price (Karpenter's behaviour)")
	fs.StringVar(&o.MinValuesPolicy, "min-values-policy", MinValuesStrict, "when a NodeClaim's allowed instance types span fewer values than a NodePool requirement's minValues: Strict refuses the launch, BestEffort launches with what there is (Karpenter's --min-values-policy)")
}
