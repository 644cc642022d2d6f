// Command kubectl-rightsize is a kubectl plugin (`kubectl rightsize …`) and
// in-cluster operator that plans right-sized nodes for pending pods. The
// commands are in pkg/cmd; main only stamps the version.
package main

import (
	"context"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/root"
	cmdversion "github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
)

// Stamped at release time with -ldflags "-X main.version=… -X main.commit=… -X main.date=…".
var (
	version = ""
	commit  = ""
	date    = ""
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := root.Execute(context.Background(), streams, cmdversion.Info{Version: version, Commit: commit, Date: date}, os.Args[1:])
	os.Exit(code)
}
