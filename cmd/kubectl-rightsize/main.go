// Command kubectl-rightsize is a kubectl plugin (`kubectl rightsize …`) and
// in-cluster operator that plans right-sized nodes for pending pods.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Stamped at release time with -ldflags "-X main.version=… -X main.commit=… -X main.date=…".
var (
	version = ""
	commit  = ""
	date    = ""
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := NewCmdRoot(streams).Execute(); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %s\n", oneLine(err.Error()))
		os.Exit(1)
	}
}
