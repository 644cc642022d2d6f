package disruption

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/flagvalue"
)

// AddFlags binds the disruption flags of `kubectl rightsize operator` to o
// and sets their defaults: consolidation, expiration and drift, their
// timings and which pods they may evict.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	flagvalue.BoolNot(fs, &o.Disabled, "disruption", true, "consolidate, expire and replace drifted nodes within the NodePools' disruption settings; false leaves nodes alone")
	fs.DurationVar(&o.Interval, "consolidation-interval", 5*time.Minute, "plan consolidation at least this often (cluster changes and consolidateAfter deadlines plan sooner)")
	fs.DurationVar(&o.ValidationDelay, "disruption-validation-delay", 15*time.Second, "wait this long after choosing a disruption action, then plan again and act only if it still holds")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 5*time.Minute, "roll a disruption action back (untaint its nodes) when draining takes longer than this")
	fs.DurationVar(&o.ReplacementTimeout, "replacement-timeout", 10*time.Minute, "roll a replacement back (untaint the old node, delete the new NodeClaim) when the new node does not initialize within this")
	fs.BoolVar(&o.AllowUncontrolled, "allow-evicting-uncontrolled-pods", false, "let disruption evict pods no controller recreates (they are lost); by default such pods keep their node")
}
