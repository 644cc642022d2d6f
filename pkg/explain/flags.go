package explain

import (
	"github.com/spf13/pflag"
)

// AddFlags binds the flags of `kubectl rightsize explain` that o owns to
// it and sets their defaults: the manifests (-f, -k, …), the catalog and
// default NodePool, the output, the scope, consolidation and the timeout.
// The command resolves RESTConfig and Namespace from the kubeconfig flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Input.AddFlags(fs, "a file, a directory, or - for stdin")
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "report the pending pods of every namespace")
	fs.BoolVar(&o.Consolidation, "consolidation", false, "also show what consolidation would do now and what it would save (read-only)")
	fs.StringVarP(&o.Output, "output", "o", "", "output format: wide, json or yaml")
	o.Catalog.AddFlags(fs)
	o.Default.AddFlags(fs)
	fs.DurationVar(&o.Timeout, "timeout", 0, "print the best plan found within this long: the search stops early enough to leave time for printing it (0: no limit)")
}
