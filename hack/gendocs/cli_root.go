package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/root"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
)

// rootCommand is the command tree the binary runs, with the version of a
// development build: no flag default depends on the version stamped.
func rootCommand() *cobra.Command {
	return root.NewCmdRoot(genericiooptions.NewTestIOStreamsDiscard(), version.Info{Version: "dev"})
}
