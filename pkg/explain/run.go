package explain

import (
	"fmt"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Options are the inputs of `kubectl rightsize explain`.
type Options struct {
	// Filenames are files, directories or "-" to read manifests from.
	Filenames []string
	// Output is "", "wide", "json" or "yaml".
	Output  string
	Catalog Catalog
	Default DefaultPool
	// Timeout bounds the solve; the best plan found by then is printed.
	Timeout time.Duration

	genericiooptions.IOStreams
}

// Validate checks the options before anything is read.
func (o *Options) Validate() error {
	if len(o.Filenames) == 0 {
		return fmt.Errorf("no input: pass manifests with -f FILE, -f DIR or -f - (live clusters are not supported yet)")
	}
	switch o.Output {
	case "", "wide", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: must be one of wide, json, yaml", o.Output)
	}
	if o.Catalog.Model.VMMemoryOverheadPercent < 0 || o.Catalog.Model.VMMemoryOverheadPercent >= 1 {
		return fmt.Errorf("--vm-memory-overhead-percent %v: must be at least 0 and below 1", o.Catalog.Model.VMMemoryOverheadPercent)
	}
	if o.Catalog.Model.MaxPods < 0 {
		return fmt.Errorf("--max-pods %d: must not be negative", o.Catalog.Model.MaxPods)
	}
	return nil
}

// Run reads the manifests, solves and prints.
func (o *Options) Run() error {
	m, err := snapshot.Read(o.Filenames, o.In)
	if err != nil {
		return err
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	types, source, err := o.Catalog.instanceTypes()
	if err != nil {
		return err
	}
	p, err := Problem(m, types, o.Default)
	if err != nil {
		return err
	}
	if o.Timeout > 0 {
		p.Options.Deadline = time.Now().Add(o.Timeout)
	}
	plan, err := solver.Solve(p)
	if err != nil {
		return fmt.Errorf("planning: %w", err)
	}
	result := NewResult(p, plan, source)
	switch o.Output {
	case "json", "yaml":
		printer, err := genericclioptions.NewJSONYamlPrintFlags().ToPrinter(o.Output)
		if err != nil {
			return err
		}
		return printer.PrintObj(result, o.Out)
	}
	return PrintHuman(o.Out, result, o.Output == "wide")
}
