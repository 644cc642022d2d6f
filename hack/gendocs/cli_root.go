package main

import "github.com/spf13/cobra"

// rootCommand is the binary's command tree. Until the commands move out of
// package main, the CLI reference is not generated.
func rootCommand() *cobra.Command { return nil }
