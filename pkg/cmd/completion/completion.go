// Package completion wires shell completion into the command tree.
package completion

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	kcompletion "k8s.io/kubectl/pkg/util/completion"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
)

// completionFunc completes a flag's value or the arguments of a command.
type completionFunc = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// workloadTypes are the TYPE/ prefixes explain accepts besides a bare pod
// name, in kubectl's singular spelling.
var workloadTypes = []string{"pod", "deployment", "statefulset", "daemonset", "replicaset", "replicationcontroller", "job", "cronjob"}

// pendingPodsTemplate prints the names of the pods not running yet.
const pendingPodsTemplate = `{{ range .items }}{{ if eq .status.phase "Pending" }}{{ .metadata.name }} {{ end }}{{ end }}`

// Register wires shell completion into the command tree, with
// kubectl's own completion helpers for what kubectl completes (contexts,
// clusters, users, namespaces, resource names) and the fixed or catalog
// values of this plugin's flags. kubectl (1.26+) completes a plugin's
// arguments through a kubectl_complete-rightsize executable on PATH that
// runs `kubectl rightsize __complete "$@"` (see the README).
func Register(root *cobra.Command, config *genericclioptions.ConfigFlags) {
	f := cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(config))
	noFiles := cobra.ShellCompDirectiveNoFileComp
	values := func(vs ...string) completionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return withPrefix(vs, toComplete), noFiles
		}
	}
	flags := map[string]completionFunc{
		"namespace": func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return kcompletion.CompGetResource(f, "namespace", toComplete), noFiles
		},
		"context":         kcompletion.ContextCompletionFunc,
		"cluster":         kcompletion.ClusterCompletionFunc,
		"user":            kcompletion.UserCompletionFunc,
		"output":          values("wide", "json", "yaml"),
		"capacity-type":   values("on-demand", "spot"),
		"cloud":           values("sim", "aws"),
		"log-format":      values("json", "text"),
		"log-level":       values("debug", "info", "error"),
		"region":          catalogValues(func(c *catalog.Catalog) []string { return c.Regions() }),
		"instance-family": catalogValues(families),
	}
	for _, c := range append(subcommands(root), root) {
		for name, fn := range flags {
			if c.LocalFlags().Lookup(name) != nil {
				// Only fails for a flag registered twice, which the
				// loop cannot do.
				_ = c.RegisterFlagCompletionFunc(name, fn)
			}
		}
		for _, name := range []string{"filename", "instance-types"} {
			if c.LocalFlags().Lookup(name) != nil {
				_ = c.MarkFlagFilename(name, "yaml", "yml", "json")
			}
		}
		if c.Name() == "explain" {
			c.ValidArgsFunction = workloadCompletion(f)
		}
	}
}

// subcommands returns every command below c.
func subcommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		out = append(out, sub)
		out = append(out, subcommands(sub)...)
	}
	return out
}

// workloadCompletion completes explain's argument: the pending pods of the
// namespace and the TYPE/ prefixes, then, after a TYPE/, that type's names.
func workloadCompletion(f cmdutil.Factory) completionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		noFiles := cobra.ShellCompDirectiveNoFileComp
		if len(args) > 0 {
			return nil, noFiles
		}
		if typ, name, ok := strings.Cut(toComplete, "/"); ok {
			var out []string
			for _, n := range kcompletion.CompGetResource(f, typ, name) {
				out = append(out, typ+"/"+n)
			}
			return out, noFiles
		}
		template := pendingPodsTemplate
		out := kcompletion.CompGetFromTemplate(&template, f, "", []string{"pods"}, toComplete)
		types := withPrefix(workloadTypes, toComplete)
		for _, t := range types {
			out = append(out, t+"/")
		}
		if len(out) == len(types) && len(types) == 1 {
			return out, noFiles | cobra.ShellCompDirectiveNoSpace // go on to the name
		}
		return out, noFiles
	}
}

// catalogValues completes from the embedded catalog.
func catalogValues(list func(*catalog.Catalog) []string) completionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := catalog.Load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return withPrefix(list(c), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// families are the instance families of the catalog (m7i of m7i.large).
func families(c *catalog.Catalog) []string {
	seen := map[string]bool{}
	for _, region := range c.Regions() {
		types, _ := c.InstanceTypes(region)
		for _, t := range types {
			family, _, _ := strings.Cut(t.Name, ".")
			seen[family] = true
		}
	}
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

func withPrefix(vs []string, prefix string) []string {
	var out []string
	for _, v := range vs {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}
