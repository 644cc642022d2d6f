package flags

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// Options are a command's options in kubectl's shape: Complete takes the
// positional arguments, Validate checks everything before anything is
// read, Run does the work.
type Options interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// RunE is the cobra RunE of a command whose options are o: it completes and
// validates them, then runs them, or hands them to runF when given (tests
// check what was parsed without running anything).
func RunE[O Options](o O, runF func(context.Context, O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		if runF != nil {
			return runF(cmd.Context(), o)
		}
		return o.Run(cmd.Context())
	}
}

// ExitError makes a command exit with Code. Err, when set, is printed as
// any error is; a nil Err prints nothing (the output already said why, as
// kubectl diff's exit status 1 does).
type ExitError struct {
	Code int
	Err  error
}

// Error implements error.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *ExitError) Unwrap() error { return e.Err }
