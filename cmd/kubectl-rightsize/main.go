// Command kubectl-rightsize is a kubectl plugin (`kubectl rightsize …`) and
// in-cluster operator that plans right-sized nodes for pending pods. The
// commands are in pkg/cmd; main only stamps the version and makes the
// context that SIGINT and SIGTERM cancel.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, the default behaviour again: a second
		// Ctrl-C ends a command that does not stop in time.
		<-ctx.Done()
		stop()
	}()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := root.Execute(ctx, streams, cmdversion.Info{Version: version, Commit: commit, Date: date}, os.Args[1:])
	stop()
	os.Exit(code)
}
