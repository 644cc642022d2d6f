package flags

import (
	"github.com/spf13/pflag"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// Input are the flags that name manifests to plan offline, as kubectl's:
// -f (files, directories, - for stdin), -k (a kustomization, rendered
// in-process), -R (directories recursively), plus --strict.
type Input struct {
	snapshot.Input
}

// AddFlags registers the input flags on fs; files says what -f takes.
func (in *Input) AddFlags(fs *pflag.FlagSet, files string) {
	fs.StringSliceVarP(&in.Filenames, "filename", "f", nil, "manifests to plan for, offline: "+files+" (repeatable)")
	fs.StringSliceVarP(&in.Kustomizations, "kustomize", "k", nil, "a kustomization directory to render and plan for, offline, as kubectl apply -k (repeatable)")
	fs.BoolVarP(&in.Recursive, "recursive", "R", false, "read the directories given with -f recursively")
	fs.BoolVar(&in.Strict, "strict", false, "reject unknown, duplicate and miscased fields instead of warning about them")
}
