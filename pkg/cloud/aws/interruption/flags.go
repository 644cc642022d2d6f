package interruption

import "github.com/spf13/pflag"

// AddFlags binds --interruption-queue of `kubectl rightsize operator` to
// o.Queue; the other options are the operator's to set when it builds the
// controller.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Queue, "interruption-queue", "", "SQS queue that EventBridge sends EC2 spot interruption, rebalance, state-change and scheduled-change events to; interrupted nodes are drained and replaced (aws; empty: off)")
}
