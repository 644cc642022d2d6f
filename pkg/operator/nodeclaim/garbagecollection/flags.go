package garbagecollection

import (
	"time"

	"github.com/spf13/pflag"
)

// AddFlags binds the garbage collector's flag of `kubectl rightsize
// operator` to o and sets its default.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.GracePeriod, "gc-grace-period", time.Minute, "how old an instance without a NodeClaim must be before it is terminated")
}
