// Package root is the `kubectl rightsize` command tree: the root command with
// the kubeconfig flags every subcommand shares, and Execute, which main
// calls.
package root

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/completion"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/explaincmd"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/importcmd"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/operatorcmd"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/tuicmd"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/interrupt"
)

// NewCmdRoot builds the `kubectl rightsize` command tree. stamped is the
// version a release stamped into main.
func NewCmdRoot(streams genericiooptions.IOStreams, stamped version.Info) *cobra.Command {
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
	op := operatorcmd.NewCmdOperator(streams, config, nil)
	op.AddCommand(operatorcmd.NewCmdOperatorInstall(streams, config, version.Current(stamped).Version, nil))
	cmd.AddCommand(
		explaincmd.NewCmdExplain(streams, config, nil),
		version.NewCmdVersion(streams, stamped, nil),
		importcmd.NewCmdImport(streams, nil),
		tuicmd.NewCmdTUI(streams, config, nil),
		op,
	)
	completion.Register(cmd, config)
	return cmd
}

// Execute runs the command line args (without the program name) until ctx
// ends, printing an error as kubectl does, on one line of ErrOut. It
// returns the process's exit code: 0, the command's (flags.ExitError), 1
// for other errors, or interrupt.ExitCode of the signal that cancelled ctx
// (130 for SIGINT, 143 for SIGTERM; see pkg/interrupt).
func Execute(ctx context.Context, streams genericiooptions.IOStreams, stamped version.Info, args []string) int {
	cmd := NewCmdRoot(streams, stamped)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var exit *flags.ExitError
	if errors.As(err, &exit) {
		code = exit.Code
		if exit.Err == nil {
			return code
		}
	}
	if sig := interrupt.FromContext(ctx); sig != nil {
		// Stopped by a signal: the shell's code for it, whatever the
		// command would have said (--exit-code's 2 included).
		code = interrupt.ExitCode(sig.Sig)
	}
	fmt.Fprintf(streams.ErrOut, "error: %s\n", oneLine(err.Error()))
	return code
}

// oneLine keeps an error message to a single line for the terminal.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
