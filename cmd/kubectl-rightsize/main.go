// Command kubectl-rightsize is a kubectl plugin (`kubectl rightsize …`) and
// in-cluster operator that plans right-sized nodes for pending pods. The
// commands are in pkg/cmd; main only stamps the version and stops the
// command on SIGINT and SIGTERM (see run).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/root"
	cmdversion "github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/interrupt"
	// kubectl's message catalog loads only for a language it translates
	// (see the package): ~20 ms of every start.
	_ "github.com/rightsize-dev/kubectl-rightsize/pkg/locale"
)

// Stamped at release time with -ldflags "-X main.version=… -X main.commit=… -X main.date=…".
var (
	version = ""
	commit  = ""
	date    = ""
)

// stopGrace is how long the command has, after the first signal, to stop
// by itself (its context is cancelled) and print its own error; then main
// exits anyway, so that a read that blocks (a FIFO, a silent stdin) or a
// step that does not check its context cannot outlast the signal by more
// than a second.
const stopGrace = 900 * time.Millisecond

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(run(streams, sigs, os.Args[1:]))
}

// run executes the command line args until it ends or a signal comes on
// sigs. The first signal cancels the command's context with the signal as
// its cause; the command then returns its error (root.Execute exits 130
// for SIGINT, 143 for SIGTERM), or, when it has not within stopGrace or a
// second signal comes, run prints one line saying what was interrupted and
// returns the signal's exit code.
func run(streams genericiooptions.IOStreams, sigs <-chan os.Signal, args []string) int {
	ctx, cancel := context.WithCancelCause(interrupt.WithDoing(context.Background()))
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- root.Execute(ctx, streams, cmdversion.Info{Version: version, Commit: commit, Date: date}, args)
	}()
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
	}
	cancel(&interrupt.Signal{Sig: sig})
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case code := <-done:
		return code
	case <-timer.C:
	case sig = <-sigs:
	}
	printInterrupted(streams.ErrOut, ctx, sig)
	return interrupt.ExitCode(sig)
}

// printInterrupted says on one line what the signal interrupted.
func printInterrupted(w io.Writer, ctx context.Context, sig os.Signal) {
	what := interrupt.Describe(ctx)
	if what == "" {
		what = "working"
	}
	fmt.Fprintf(w, "error: interrupted by %s while %s; stopped\n", interrupt.Name(sig), what)
}
