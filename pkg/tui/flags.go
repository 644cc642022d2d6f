package tui

import (
	"time"

	"github.com/spf13/pflag"
)

// DefaultTimeout bounds each re-plan of the TUI: the best plan found by
// then is shown, so that a big cluster still refreshes promptly.
const DefaultTimeout = 10 * time.Second

// AddFlags binds the flags of `kubectl rightsize tui` that o owns to it and
// sets their defaults: --read-only, the catalog and default NodePool, and
// --timeout. The command binds the input and the cloud flags and sets the
// rest of o when it runs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.ReadOnly, "read-only", false, "show only: no selecting or launching")
	o.Catalog.AddFlags(fs)
	o.Default.AddFlags(fs)
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "stop improving each re-plan after this long and show the best found")
}

// Validate checks the catalog and default NodePool flags before anything
// is read.
func (o *Options) Validate() error {
	if err := o.Catalog.Validate(); err != nil {
		return err
	}
	return o.Default.Validate()
}
