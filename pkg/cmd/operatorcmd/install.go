package operatorcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/module"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/rightsize-dev/kubectl-rightsize/config"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/cloudprovider"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
)

const operatorInstallExample = `  # Print the manifests of this version for an EKS cluster, to review or commit
  kubectl rightsize operator install --cluster-name prod --region eu-west-1 > rightsize.yaml

  # Install them into the cluster of the current context
  kubectl rightsize operator install --cluster-name prod --region eu-west-1 --apply

  # Draining spot nodes on EC2 interruption warnings, from an SQS queue fed by EventBridge
  kubectl rightsize operator install --cluster-name prod --interruption-queue prod-interruptions --apply

  # With IAM roles for service accounts on EKS
  kubectl rightsize operator install --cluster-name prod --iam-role-arn arn:aws:iam::111122223333:role/rightsize --apply

  # The simulated cloud, where kwok plays the kubelets of launched nodes
  kubectl rightsize operator install --cloud sim --apply

  # Into kube-system, as Karpenter is, leaving its labels as they are (no Namespace object)
  kubectl rightsize operator install --cluster-name prod -n kube-system --create-namespace=false`

// fieldManager owns the fields that `operator install --apply` sets.
const fieldManager = "kubectl-rightsize"

// OperatorInstallOptions are the settings of `kubectl rightsize operator install`.
type OperatorInstallOptions struct {
	genericiooptions.IOStreams
	// Cluster gives the kubeconfig flags (for -n and --apply).
	Cluster genericclioptions.RESTClientGetter

	Manifests config.Options
	// Apply installs the manifests with server-side apply instead of printing them.
	Apply bool
	// Version is the plugin's version; it picks the default image tag.
	Version string
	// CreateNamespace includes the Namespace object (config.Options'
	// ExistingNamespace is its negation).
	CreateNamespace bool
}

// NewCmdOperatorInstall builds `kubectl rightsize operator install`, meant to
// be attached under the `operator` command. cluster gives the kubeconfig flags
// of the root command; pluginVersion is this plugin's version (empty: the
// build's). The command only parses: it runs runF when given (tests), else
// OperatorInstallOptions.Run.
func NewCmdOperatorInstall(streams genericiooptions.IOStreams, cluster genericclioptions.RESTClientGetter, pluginVersion string, runF func(context.Context, *OperatorInstallOptions) error) *cobra.Command {
	o := &OperatorInstallOptions{IOStreams: streams, Cluster: cluster, Version: pluginVersion}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Print, or apply with --apply, the operator's manifests for this version",
		Long: `Print the manifests that run the operator in a cluster: its namespace, the
CRDs, a ServiceAccount with least-privilege RBAC, and a Deployment of two
replicas with leader election, probes, resource limits, one replica per node,
the priority system-cluster-critical, a metrics Service and a
PodDisruptionBudget. The image is the one released with
this version of the plugin.

With --apply they are installed with server-side apply into the cluster of the
current kubeconfig context (-n chooses the namespace, default ` + config.DefaultNamespace + `).

The namespace is the operator's own: the manifests create it with the
restricted Pod Security Standard's labels. A namespace shared with other
workloads (default, kube-system and every kube-*) is refused, since those
labels would refuse the pods of aws-node, kube-proxy and CSI drivers there;
--create-namespace=false installs into an existing namespace without the
Namespace object, so its labels are left as they are. --apply also refuses
to take over an existing namespace that an earlier install did not create.`,
		Example: operatorInstallExample,
		Args:    cobra.NoArgs,
		RunE:    flags.RunE(o, runF),
	}
	f := cmd.Flags()
	f.StringVar(&o.Manifests.Cloud, "cloud", "aws", "cloud the operator launches nodes in: "+strings.Join(config.Clouds, " or "))
	f.StringVar(&o.Manifests.ClusterName, "cluster-name", "", "name of the cluster; the operator tags the instances it launches with it (required with --cloud aws; default "+cloudprovider.DefaultSimClusterName+" with sim)")
	f.StringVar(&o.Manifests.Region, "region", "", "cloud region (default: the operator's environment, e.g. the EC2 instance metadata)")
	f.StringVar(&o.Manifests.ClusterEndpoint, "cluster-endpoint", "", "API server URL new nodes join (aws; default: the operator's in-cluster server)")
	f.StringVar(&o.Manifests.KubernetesVersion, "kubernetes-version", "", "the cluster's minor version for AMI aliases, e.g. 1.33 (aws)")
	f.StringVar(&o.Manifests.Image, "image", "", "operator image, or a tag of "+config.ImageRepository+" (default: this plugin's version)")
	f.StringVar(&o.Manifests.InterruptionQueue, "interruption-queue", "", "SQS queue EventBridge sends EC2 interruption events to; the operator drains and replaces interrupted nodes (aws; see docs/aws.md)")
	f.StringVar(&o.Manifests.IAMRoleARN, "iam-role-arn", "", "IAM role for the operator's ServiceAccount (EKS IAM roles for service accounts)")
	f.BoolVar(&o.Apply, "apply", false, "install into the cluster with server-side apply instead of printing")
	f.BoolVar(&o.CreateNamespace, "create-namespace", true, "include the Namespace, labelled with the restricted Pod Security Standard; false installs into an existing namespace and leaves its labels alone (required for default and kube-*)")
	return cmd
}

// Complete fills the namespace from -n and the image from the version.
func (o *OperatorInstallOptions) Complete([]string) error {
	if o.Version == "" {
		o.Version = version.Current(version.Info{}).Version
	}
	if o.Cluster != nil {
		ns, explicit, err := o.Cluster.ToRawKubeConfigLoader().Namespace()
		if err == nil && explicit {
			o.Manifests.Namespace = ns
		}
	}
	if o.Manifests.Namespace == "" {
		o.Manifests.Namespace = config.DefaultNamespace
	}
	o.Manifests.ExistingNamespace = !o.CreateNamespace
	if o.Manifests.Image == "" {
		o.Manifests.Image = imageTag(o.Version)
	}
	if o.Manifests.ClusterName == "" && o.Manifests.Cloud != "aws" {
		// Nothing outside the cluster is tagged, so any name does.
		o.Manifests.ClusterName = cloudprovider.DefaultSimClusterName
	}
	return nil
}

// Validate checks the flags before anything is rendered or sent.
func (o *OperatorInstallOptions) Validate() error {
	if o.Manifests.Cloud == "aws" && o.Manifests.ClusterName == "" {
		return errors.New("--cluster-name is required with --cloud aws: the operator tags the instances it launches with it, " +
			"and only ever deletes instances carrying that tag; pass the EKS cluster's name")
	}
	return o.Manifests.Validate()
}

// Run prints the rendered manifests or applies them.
func (o *OperatorInstallOptions) Run(ctx context.Context) error {
	manifests, err := config.Render(o.Manifests)
	if err != nil {
		return err
	}
	if !o.Apply {
		header := fmt.Sprintf("# kubectl-rightsize operator %s: cloud %s, namespace %s, image %s\n",
			o.Version, o.Manifests.Cloud, o.Manifests.Namespace, o.Manifests.ImageRef())
		if _, err := fmt.Fprint(o.Out, header); err != nil {
			return err
		}
		_, err = o.Out.Write(manifests)
		return err
	}
	return o.apply(ctx, manifests)
}

// apply sends every object with server-side apply, in the rendered order
// (namespace and CRDs first), and reports each as kubectl does.
func (o *OperatorInstallOptions) apply(ctx context.Context, manifests []byte) error {
	if o.Cluster == nil {
		return errors.New("--apply needs a cluster: none is configured")
	}
	infos, err := resource.NewBuilder(o.Cluster).
		Unstructured().
		Stream(bytes.NewReader(manifests), "operator manifests").
		Flatten().
		Do().
		Infos()
	if err != nil {
		return fmt.Errorf("cannot map the operator manifests to the cluster's API: %w; check the kubeconfig context", err)
	}
	if err := o.checkNamespace(ctx, infos); err != nil {
		return err
	}
	force := true
	for _, info := range infos {
		data, err := runtime.Encode(unstructuredJSON, info.Object)
		if err != nil {
			return err
		}
		helper := resource.NewHelper(info.Client, info.Mapping).WithFieldManager(fieldManager)
		obj, err := helper.Patch(info.Namespace, info.Name, types.ApplyPatchType, data, &metav1.PatchOptions{Force: &force})
		if err != nil {
			return fmt.Errorf("applying %s %s: %w; the objects before it were applied, fix the cause and run again (apply is idempotent)",
				strings.ToLower(info.Mapping.GroupVersionKind.Kind), info.Name, err)
		}
		_ = info.Refresh(obj, true)
		fmt.Fprintf(o.Out, "%s/%s serverside-applied\n", kindResource(info), info.Name)
	}
	fmt.Fprintf(o.ErrOut, "The operator is starting; watch it with:\n  kubectl -n %s rollout status deployment/%s\n",
		o.Manifests.Namespace, config.Deployment)
	return nil
}

// checkNamespace refuses to apply a Namespace object over an existing
// namespace that an earlier install did not make (it carries the manifests'
// app.kubernetes.io/part-of label): server-side apply with force would take
// over its labels and put its other pods under the restricted Pod Security
// Standard. Without a Namespace object (--create-namespace=false) the
// namespace must exist.
func (o *OperatorInstallOptions) checkNamespace(ctx context.Context, infos []*resource.Info) error {
	ns := o.Manifests.Namespace
	for _, info := range infos {
		if info.Mapping.GroupVersionKind.Kind != "Namespace" {
			continue
		}
		obj, err := resource.NewHelper(info.Client, info.Mapping).Get("", info.Name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		current, ok := obj.(metav1.Object)
		if !ok || current.GetLabels()[partOfLabel] != partOfValue {
			return fmt.Errorf("namespace %s exists and was not created by operator install: applying would label it with the restricted Pod Security Standard, "+
				"which its other pods may not meet; pass --create-namespace=false to install into it as it is, or choose another with -n", ns)
		}
		return nil
	}
	// No Namespace object: the namespace must exist already.
	client, err := o.Cluster.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("--create-namespace=false: %w", err)
	}
	cs, err := kubernetes.NewForConfig(client)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s does not exist, and --create-namespace=false leaves it out: create it first, or drop --create-namespace=false", ns)
		}
		return fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return nil
}

// The label config/default puts on every object it makes, the Namespace
// included: a namespace carrying it was made by an install.
const (
	partOfLabel = "app.kubernetes.io/part-of"
	partOfValue = "kubectl-rightsize"
)

// kindResource names an object's kind as kubectl's apply output does
// ("deployment.apps").
func kindResource(info *resource.Info) string {
	gk := info.Mapping.GroupVersionKind.GroupKind()
	if gk.Group == "" {
		return strings.ToLower(gk.Kind)
	}
	return strings.ToLower(gk.Kind) + "." + gk.Group
}

// unstructuredJSON encodes unstructured objects as JSON for apply patches.
var unstructuredJSON = unstructured.UnstructuredJSONScheme

// releaseVersion matches the versions releases stamp: 1.2.3, v1.2.3, 1.2.3-rc.1.
var releaseVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?$`)

// describedBuild matches what `git describe --dirty` adds to a tag for a
// build made after it or from a modified tree (v1.2.3-4-gabc1234,
// v1.2.3-dirty): no release publishes an image of that name.
var describedBuild = regexp.MustCompile(`(-[0-9]+-g[0-9a-f]{4,}|[-+]dirty)$`)

// imageTag is the tag of the image released with version: releases are
// tagged vX.Y.Z; a development build, or one made after a tag or from a
// modified tree, has no released image, so it uses "latest" (pass --image
// to pin one).
func imageTag(version string) string {
	// A `go install` of an untagged commit stamps a Go pseudo-version
	// (v0.0.0-20261204204816-f7321e759eec): no image is released by it.
	if module.IsPseudoVersion(version) {
		return "latest"
	}
	if releaseVersion.MatchString(version) && !describedBuild.MatchString(version) {
		return "v" + strings.TrimPrefix(version, "v")
	}
	return "latest"
}
