// Package version is the `kubectl rightsize version` command and the
// plugin's version, from what a release stamps into main and the build info.
package version

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Info is what `version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	// Modified is set when the binary was built from a tree with
	// uncommitted changes: the build info's vcs.modified, or a version
	// that `git describe --dirty` (the Makefile's) or go build marked.
	Modified bool `json:"modified"`
}

// Current completes stamped, the version, commit and date a release
// stamps into main with -ldflags "-X main.version=…", from the build info:
// the module version and the VCS revision, time and modification. A
// development build is version "dev".
func Current(stamped Info) Info {
	info, _ := debug.ReadBuildInfo()
	return fromBuildInfo(stamped, info)
}

// fromBuildInfo is Current with the build info given (nil: none).
func fromBuildInfo(stamped Info, info *debug.BuildInfo) Info {
	v := stamped
	if info != nil {
		v.GoVersion = info.GoVersion
		if v.Version == "" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && v.Commit == "":
				v.Commit = s.Value
			case s.Key == "vcs.time" && v.Date == "":
				v.Date = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				v.Modified = true
			}
		}
	}
	// git describe --dirty ends the version with -dirty, go build (since
	// Go 1.24) with +dirty.
	if strings.HasSuffix(v.Version, "-dirty") || strings.HasSuffix(v.Version, "+dirty") {
		v.Modified = true
	}
	if v.Version == "" || v.Version == "(devel)" {
		v.Version = "dev"
	}
	return v
}

// VersionOptions are the options of `kubectl rightsize version`.
type VersionOptions struct {
	genericiooptions.IOStreams
	// Stamped is what the release stamped into main (see Current).
	Stamped Info
	// Info is what is printed; Complete sets it from Stamped.
	Info Info
	// Output is "" (one line) or "json".
	Output string
}

// NewCmdVersion builds `kubectl rightsize version`; stamped is what the
// release stamped into main. The command only parses: it runs runF when
// given (tests), else VersionOptions.Run.
func NewCmdVersion(streams genericiooptions.IOStreams, stamped Info, runF func(*VersionOptions) error) *cobra.Command {
	o := &VersionOptions{IOStreams: streams, Stamped: stamped}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl-rightsize",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Complete()
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json")
	return cmd
}

// Complete fills Info from Stamped and the build info.
func (o *VersionOptions) Complete() {
	o.Info = Current(o.Stamped)
}

// Validate checks the output format.
func (o *VersionOptions) Validate() error {
	switch o.Output {
	case "", "json":
		return nil
	}
	return fmt.Errorf("--output %q: must be json or empty", o.Output)
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	v := o.Info
	if o.Output == "json" {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	commit := orUnknown(v.Commit)
	if v.Modified {
		// As git describe --dirty marks it: not the commit's code alone.
		commit += "-dirty"
	}
	_, err := fmt.Fprintf(o.Out, "kubectl-rightsize %s (commit %s, built %s, %s)\n", v.Version, commit, orUnknown(v.Date), v.GoVersion)
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
