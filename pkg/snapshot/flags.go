package snapshot

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AddFlags binds the flags that name manifests to plan offline, as
// kubectl's, to in: -f (files, directories, - for stdin), -k (a
// kustomization, rendered in-process), -R (directories recursively), plus
// --strict, --max-input-size and --allow-remote-bases; files says what -f
// takes.
func (in *Input) AddFlags(fs *pflag.FlagSet, files string) {
	fs.StringSliceVarP(&in.Filenames, "filename", "f", nil, "manifests to plan for, offline: "+files+" (repeatable)")
	fs.StringSliceVarP(&in.Kustomizations, "kustomize", "k", nil, "a kustomization directory to render and plan for, offline, as kubectl apply -k (repeatable); remote bases need --allow-remote-bases")
	fs.BoolVarP(&in.Recursive, "recursive", "R", false, "read the directories given with -f recursively")
	fs.BoolVar(&in.Strict, "strict", false, "reject unknown, duplicate and miscased fields instead of warning about them")
	fs.BoolVar(&in.AllowRemoteBases, "allow-remote-bases", false, "let -k fetch the remote bases and resources a kustomization names (git, http), bounded by --timeout; without it -k stays offline and refuses them")
	AddMaxInputSize(fs, &in.MaxInputSize)
}

// AddMaxInputSize registers --max-input-size, the bound on each input
// (a file, stdin, a rendered kustomization, --instance-types), on fs.
// Every command that reads input registers it here, so that the flag
// reads and means the same everywhere.
func AddMaxInputSize(fs *pflag.FlagSet, size *int64) {
	*size = DefaultMaxInputSize
	fs.Var((*byteSize)(size), "max-input-size", "largest input read (each file, stdin, rendered kustomization or --instance-types file), as a quantity: 256Mi, 1Gi, 1000000")
}

// byteSize is a size flag written as a Kubernetes quantity.
type byteSize int64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("not a size (256Mi, 1Gi, 1000000): %w", err)
	}
	v, ok := q.AsInt64()
	if !ok || v <= 0 {
		return fmt.Errorf("%s: must be a whole number of bytes above 0 and below 8Ei", s)
	}
	*b = byteSize(v)
	return nil
}

func (b *byteSize) Type() string { return "size" }
