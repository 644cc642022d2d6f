package repair

import (
	"github.com/spf13/pflag"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/flagvalue"
)

// AddFlags binds the node repair flags of `kubectl rightsize operator` to
// o and sets their defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	flagvalue.BoolNot(fs, &o.Disabled, "node-repair", true, "replace nodes that stay unhealthy (Ready False or Unknown 30m, EKS node monitoring conditions 10-30m), unless over 20% of their NodePool is")
	fs.DurationVar(&o.Toleration, "node-repair-toleration", 0, "how long any repair condition is tolerated before the node is replaced (0: each condition's own)")
}
