package main

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/completion"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/importcmd"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/operator"
	cmdversion "github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
)

// NewCmdRoot builds the `kubectl rightsize` command tree.
func NewCmdRoot(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubectl-rightsize",
		Short: "Right-sized nodes for pending pods: see the plan, its cost and why",
		Long: `kubectl rightsize plans the cheapest right-sized nodes for your workloads,
explains why pods are pending and what would fix them, and what it costs.

It reads the cluster of your kubeconfig, or works offline on manifests (-f),
with an embedded AWS price catalog.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl rightsize"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	config := genericclioptions.NewConfigFlags(true)
	config.AddFlags(cmd.PersistentFlags())
	stamped := cmdversion.Info{Version: version, Commit: commit, Date: date}
	op := operator.NewCmdOperator(streams, config, nil)
	op.AddCommand(operator.NewCmdOperatorInstall(streams, config, cmdversion.Current(stamped).Version, nil))
	cmd.AddCommand(NewCmdExplain(streams, config), cmdversion.NewCmdVersion(streams, stamped, nil), importcmd.NewCmdImport(streams, nil), NewCmdTUI(streams, config), op)
	completion.Register(cmd, config)
	return cmd
}

// oneLine keeps an error message to a single line for the terminal.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
