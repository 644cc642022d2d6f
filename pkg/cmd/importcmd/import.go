// Package importcmd is the `kubectl rightsize import` command, which converts
// Karpenter manifests with pkg/importer (the package is not named import,
// a Go keyword).
package importcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/importer"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

const importExample = `  # Convert Karpenter manifests to rightsize's and apply them
  kubectl rightsize import -f karpenter/ | kubectl apply -f -

  # Convert what a cluster running Karpenter has, as JSON
  kubectl get nodepools.karpenter.sh,ec2nodeclasses.karpenter.k8s.aws -o yaml | kubectl rightsize import -f - -o json

  # The Reserved Instances and Savings Plans the AWS account bought, as Commitments
  kubectl rightsize import --aws-commitments --region us-east-1 > commitments.yaml`

// ImportOptions are the options of `kubectl rightsize import`.
type ImportOptions struct {
	genericiooptions.IOStreams
	// Filenames are files, directories or "-" for stdin.
	Filenames []string
	// Output is yaml (the default) or json.
	Output string
	// MaxInputSize bounds each input (--max-input-size).
	MaxInputSize int64
	// AWSCommitments reads the AWS account's Reserved Instances and
	// Savings Plans instead of manifests (--aws-commitments), in Region
	// (the SDK's chain when empty).
	AWSCommitments bool
	Region         string
}

// NewCmdImport builds `kubectl rightsize import`. The command only parses:
// it runs runF when given (tests), else ImportOptions.Run.
func NewCmdImport(streams genericiooptions.IOStreams, runF func(context.Context, *ImportOptions) error) *cobra.Command {
	o := &ImportOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "import (-f FILENAME | --aws-commitments)",
		Short: "Convert Karpenter NodePools, Provisioners and EC2NodeClasses into rightsize's",
		Long: `Convert Karpenter manifests into rightsize.dev/v1alpha1 objects and print them.

It reads karpenter.sh/v1alpha5 Provisioners (also ones mixing in v1beta1's
spec.template and spec.disruption), karpenter.sh/v1beta1 and v1 NodePools,
karpenter.k8s.aws/v1beta1 and v1 EC2NodeClasses and v1alpha1 AWSNodeTemplates,
and prints NodePools and EC2NodeClasses with the same field names. Fields
that are renamed, moved or cannot be carried over are reported on stderr, one
line each; other kinds in the input are skipped with a note.

Workloads that select Karpenter's node labels keep scheduling: a NodePool
made from a Provisioner named X has the template label
karpenter.sh/provisioner-name: X, and the operator labels every node of every
pool with karpenter.sh/nodepool: <pool name> as well as rightsize.dev/nodepool.

With --aws-commitments it reads instead what the AWS account (the SDK's
usual credentials) bought in the region: active EC2 Reserved Instances
(ec2:DescribeReservedInstances) and Savings Plans with their EC2 rates
(savingsplans:DescribeSavingsPlans, savingsplans:DescribeSavingsPlanRates),
and prints them as rightsize.dev/v1alpha1 Commitments, which
kubectl rightsize explain spends as a budget.`,
		Example: importExample,
		Args:    cobra.NoArgs,
		RunE:    flags.RunE(o, runF),
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.Filenames, "filename", "f", nil, "Karpenter manifests to convert: a file, a directory, or - for stdin (repeatable)")
	f.StringVarP(&o.Output, "output", "o", "yaml", "output format: yaml or json")
	snapshot.AddMaxInputSize(f, &o.MaxInputSize)
	f.BoolVar(&o.AWSCommitments, "aws-commitments", false, "print the AWS account's Reserved Instances and Savings Plans as Commitments instead of converting manifests")
	f.StringVar(&o.Region, "region", "", "AWS region of --aws-commitments (default: AWS_REGION or the shared config)")
	return cmd
}

// Complete fills in defaults.
func (o *ImportOptions) Complete([]string) error {
	if o.Output == "" {
		o.Output = "yaml"
	}
	return nil
}

// Validate checks the options.
func (o *ImportOptions) Validate() error {
	switch {
	case o.AWSCommitments && len(o.Filenames) > 0:
		return errors.New("-f and --aws-commitments: give one, manifests to convert or the AWS account to read")
	case o.Region != "" && !o.AWSCommitments:
		return errors.New("--region is for --aws-commitments")
	case len(o.Filenames) == 0 && !o.AWSCommitments:
		return errors.New("no input: give the Karpenter manifests with -f FILE, -f DIR or -f - for stdin, or --aws-commitments")
	}
	switch o.Output {
	case "yaml", "json":
	default:
		return fmt.Errorf("unknown output format %q: use -o yaml or -o json", o.Output)
	}
	return nil
}

// Run converts the manifests, prints the objects on Out and the warnings on
// ErrOut.
func (o *ImportOptions) Run(ctx context.Context) error {
	if o.AWSCommitments {
		return o.runCommitments(ctx)
	}
	res, err := importer.ImportInput(ctx, snapshot.Input{Filenames: o.Filenames, MaxInputSize: o.MaxInputSize}, o.In)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", strings.Join(strings.Fields(w), " ")) // one line each
	}
	if o.Output == "json" {
		return importer.PrintJSON(o.Out, res.Objects)
	}
	return importer.PrintYAML(o.Out, res.Objects)
}

// runCommitments prints the AWS account's commitments.
func (o *ImportOptions) runCommitments(ctx context.Context) error {
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("loading the AWS configuration: %w", err)
	}
	cs, err := aws.ImportCommitments(ctx, cfg)
	if err != nil {
		return fmt.Errorf("reading the account's commitments: %w", err)
	}
	if len(cs) == 0 {
		fmt.Fprintf(o.ErrOut, "Warning: no active Reserved Instance or Savings Plan in %s\n", cfg.Region)
	}
	objs := make([]runtime.Object, len(cs))
	for i := range cs {
		objs[i] = &cs[i]
	}
	if o.Output == "json" {
		return importer.PrintJSON(o.Out, objs)
	}
	return importer.PrintYAML(o.Out, objs)
}
