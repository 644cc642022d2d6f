package tui

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	tea "charm.land/bubbletea/v2"
	"k8s.io/klog/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// Run runs the program on a terminal until the user quits. With clients
// (live), it watches the cluster and, unless opts.ReadOnly, launches
// proposed nodes as NodeClaims; offline, opts.Manifests must be set.
func Run(ctx context.Context, opts Options, clients *snapshot.ClusterClients, in io.Reader, out io.Writer) error {
	if clients == nil && opts.Manifests == nil {
		return errors.New("tui: neither a cluster nor manifests to show")
	}
	quietKlog()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if clients != nil && !opts.ReadOnly && opts.Launcher == nil && opts.NoLaunch == "" {
		opts.Launcher = &launch.NodeClaimLauncher{Dynamic: clients.Dynamic, Discovery: clients.Kube.Discovery(), Kube: clients.Kube, LaunchedBy: "kubectl-rightsize-tui"}
	}
	m := New(opts)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	if clients != nil {
		w := watch.Start(ctx, *clients, func(msg any) { p.Send(msg) })
		m.opts.Ensure = w.Ensure
	}
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tui: %w", err)
	}
	return nil
}

// quietKlog keeps client-go's log lines (watch retries and the like) off
// the screen the program draws; the program shows watch errors itself.
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
