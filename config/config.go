// Package config holds the operator's Kubernetes manifests as kustomize bases
// (crd, rbac, manager, and default which ties them together) and renders them
// for `kubectl rightsize operator install`.
//
// The same files serve `kubectl apply -k config/default` from a checkout and
// the plugin, which embeds them and runs kustomize in-process: the plugin's
// binary already links kustomize through cli-runtime (kubectl's -k), so this
// costs it nothing, and there is one source of truth for what gets installed.
package config

import (
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The CRDs come from pkg/apis/v1alpha1's own go:generate; these write the
// ClusterRoles from the +kubebuilder:rbac markers: rbac/role.yaml from the
// operator's controllers and the AWS provider (every install), sim/role.yaml
// from the simulated cloud, which only `--cloud sim` installs get (it creates
// Node objects; on AWS the kubelet does).
//go:generate go tool controller-gen rbac:roleName=rightsize-operator paths=../pkg/operator/... paths=../pkg/cloud/aws/... output:rbac:artifacts:config=rbac
//go:generate go tool controller-gen rbac:roleName=rightsize-operator-sim paths=../pkg/cloud/sim/... output:rbac:artifacts:config=sim

//go:embed crd/*.yaml rbac/*.yaml manager/*.yaml default/*.yaml sim/*.yaml
var bases embed.FS

// Defaults of the rendered manifests.
const (
	// DefaultNamespace is where the operator runs.
	DefaultNamespace = "rightsize-system"
	// ImageRepository is where releases publish the operator image.
	ImageRepository = "ghcr.io/rightsize-dev/kubectl-rightsize"
	// ServiceAccount is the operator's identity, bound to the generated ClusterRole.
	ServiceAccount = "rightsize-operator"
	// Deployment is the name of the operator's Deployment.
	Deployment = "rightsize-operator"
)

// Clouds the operator can drive, as accepted by Options.Cloud.
var Clouds = []string{"aws", "sim"}

// Options choose what Render produces. The zero value renders config/default
// as it is in the repository.
type Options struct {
	// Namespace replaces DefaultNamespace.
	Namespace string
	// Image is the operator image: a full reference ("registry/repo:tag" or
	// "…@sha256:…"), or just a tag of ImageRepository.
	Image string
	// Cloud and ClusterName go into the operator's ConfigMap and from there
	// onto its command line.
	Cloud, ClusterName string
	// Region, ClusterEndpoint and KubernetesVersion become the operator's
	// --region, --cluster-endpoint and --kubernetes-version flags when set;
	// unset, the operator's defaults apply.
	Region, ClusterEndpoint, KubernetesVersion string
	// IAMRoleARN, when set, annotates the ServiceAccount for EKS IAM roles for
	// service accounts (eks.amazonaws.com/role-arn).
	IAMRoleARN string
	// InterruptionQueue, when set, becomes the operator's
	// --interruption-queue flag (aws only).
	InterruptionQueue string
	// ExistingNamespace leaves the Namespace object out: the operator goes
	// into a namespace that exists already and is not its own, whose labels
	// (the Pod Security Standard its other pods run under) the manifests
	// must not change. A shared namespace (SharedNamespace) requires it.
	ExistingNamespace bool
}

// SharedNamespace reports whether ns belongs to the cluster itself or to
// everyone — default and every kube-* namespace (kube-system, kube-public,
// kube-node-lease) — rather than to the operator. The manifests label their
// namespace with the restricted Pod Security Standard, which in such a
// namespace would refuse the pods of aws-node, kube-proxy and CSI drivers,
// so `operator install` and the Helm chart render no Namespace for one
// (ExistingNamespace, the chart's namespace.create=false) and refuse to
// otherwise. The chart's checkNamespace template applies the same rule
// (hack/genchart writes it from SharedNamespacePrefix and
// SharedNamespaceNames).
func SharedNamespace(ns string) bool {
	return slices.Contains(SharedNamespaceNames, ns) || strings.HasPrefix(ns, SharedNamespacePrefix)
}

// SharedNamespacePrefix and SharedNamespaceNames define SharedNamespace.
const SharedNamespacePrefix = "kube-"

// SharedNamespaceNames are the shared namespaces SharedNamespacePrefix does
// not cover.
var SharedNamespaceNames = []string{"default"}

// Validate reports the first option that cannot be rendered, as a sentence
// naming the flag to fix.
func (o Options) Validate() error {
	if o.Cloud != "" && !slices.Contains(Clouds, o.Cloud) {
		return fmt.Errorf("cloud %q is not supported: use one of %s", o.Cloud, strings.Join(Clouds, ", "))
	}
	if o.Namespace != "" && !dnsLabel.MatchString(o.Namespace) {
		return fmt.Errorf("namespace %q is not a valid DNS label: use lower-case letters, digits and '-'", o.Namespace)
	}
	if SharedNamespace(o.Namespace) && !o.ExistingNamespace {
		return fmt.Errorf("namespace %s is shared with the cluster's own workloads: the manifests would label it with the restricted Pod Security Standard, "+
			"which refuses new pods of aws-node, kube-proxy and CSI drivers there; install into a namespace of the operator's own (default %s), "+
			"or leave %s as it is with --create-namespace=false (Helm: namespace.create=false)", o.Namespace, DefaultNamespace, o.Namespace)
	}
	if o.ClusterName != "" && !clusterName.MatchString(o.ClusterName) {
		return fmt.Errorf("cluster name %q: use letters, digits, '-' and '_' (it tags cloud instances)", o.ClusterName)
	}
	if o.Region != "" && !dnsLabel.MatchString(o.Region) {
		return fmt.Errorf("region %q does not look like a region (e.g. us-east-1)", o.Region)
	}
	if o.ClusterEndpoint != "" {
		if u, err := url.Parse(o.ClusterEndpoint); err != nil || u.Scheme != "https" || u.Host == "" || strings.ContainsAny(o.ClusterEndpoint, " \t\n\"'") {
			return fmt.Errorf("cluster endpoint %q is not an https:// URL (the EKS API server endpoint)", o.ClusterEndpoint)
		}
	}
	if o.KubernetesVersion != "" && !minorVersion.MatchString(o.KubernetesVersion) {
		return fmt.Errorf("kubernetes version %q: want the cluster's minor version, e.g. 1.33", o.KubernetesVersion)
	}
	if o.IAMRoleARN != "" && !strings.HasPrefix(o.IAMRoleARN, "arn:") {
		return fmt.Errorf("IAM role %q is not an ARN (arn:aws:iam::<account>:role/<name>)", o.IAMRoleARN)
	}
	if o.InterruptionQueue != "" && !queueName.MatchString(o.InterruptionQueue) {
		return fmt.Errorf("interruption queue %q is not an SQS queue name (up to 80 letters, digits, '-' and '_')", o.InterruptionQueue)
	}
	if o.InterruptionQueue != "" && o.Cloud != "" && o.Cloud != "aws" {
		return fmt.Errorf("an interruption queue is for --cloud aws, not %q", o.Cloud)
	}
	if o.Image != "" && strings.ContainsAny(o.Image, " \t\n\"'") {
		return fmt.Errorf("image %q is not an image reference", o.Image)
	}
	return nil
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	clusterName  = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_]{0,99}$`)
	minorVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+$`)
	queueName    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
)

// Render runs kustomize on config/default with an overlay made from o and
// returns the multi-document YAML, in the order kubectl applies it
// (namespaces and CRDs first).
func Render(o Options) ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(bases, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := bases.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/config", p), b)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded manifests: %w", err)
	}
	if err := mem.WriteFile("/config/install/kustomization.yaml", []byte(overlay(o))); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	res, err := krusty.MakeKustomizer(opts).Run(mem, "/config/install")
	if err != nil {
		return nil, fmt.Errorf("rendering the operator manifests: %w", err)
	}
	if o.ExistingNamespace {
		for _, r := range res.Resources() {
			if r.GetKind() == "Namespace" {
				if err := res.Remove(r.CurId()); err != nil {
					return nil, fmt.Errorf("leaving the namespace out: %w", err)
				}
			}
		}
	}
	return res.AsYaml()
}

// overlay is the kustomization that turns o into changes of config/default.
// Every value has passed Validate, and is quoted as a YAML string.
func overlay(o Options) string {
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../default\n")
	if o.Cloud == "sim" {
		// The simulated cloud creates the Node objects of its instances;
		// on a real cloud the kubelet does, so only sim gets this role.
		b.WriteString("components:\n- ../sim\n")
	}
	if o.Namespace != "" {
		fmt.Fprintf(&b, "namespace: %q\n", o.Namespace)
	}
	if o.Image != "" {
		name, tag, digest := splitImage(o.Image)
		fmt.Fprintf(&b, "images:\n- name: %q\n  newName: %q\n", ImageRepository, name)
		if digest != "" {
			fmt.Fprintf(&b, "  digest: %q\n", digest)
		} else {
			fmt.Fprintf(&b, "  newTag: %q\n", tag)
		}
	}
	var lits []string
	for _, kv := range [][2]string{{"cloud", o.Cloud}, {"cluster-name", o.ClusterName}} {
		if kv[1] != "" {
			lits = append(lits, fmt.Sprintf("  - %q", kv[0]+"="+kv[1]))
		}
	}
	if len(lits) > 0 {
		fmt.Fprintf(&b, "configMapGenerator:\n- name: rightsize-operator-config\n  behavior: merge\n  literals:\n%s\n", strings.Join(lits, "\n"))
	}
	var patches []string
	var args []string
	for _, kv := range [][2]string{{"region", o.Region}, {"cluster-endpoint", o.ClusterEndpoint}, {"kubernetes-version", o.KubernetesVersion},
		{"interruption-queue", o.InterruptionQueue}} {
		if kv[1] != "" {
			args = append(args, fmt.Sprintf("    - {op: add, path: /spec/template/spec/containers/0/args/-, value: %q}", "--"+kv[0]+"="+kv[1]))
		}
	}
	if len(args) > 0 {
		patches = append(patches, fmt.Sprintf("- target: {group: apps, kind: Deployment, name: %s}\n  patch: |-\n%s\n", Deployment, strings.Join(args, "\n")))
	}
	if o.IAMRoleARN != "" {
		patches = append(patches, fmt.Sprintf(`- target: {kind: ServiceAccount, name: %s}
  patch: |-
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: %s
      annotations:
        eks.amazonaws.com/role-arn: %q
`, ServiceAccount, ServiceAccount, o.IAMRoleARN))
	}
	if len(patches) > 0 {
		b.WriteString("patches:\n" + strings.Join(patches, ""))
	}
	return b.String()
}

// ImageRef is the full reference of the image the manifests run.
func (o Options) ImageRef() string {
	if o.Image == "" {
		return ImageRepository + ":latest"
	}
	name, tag, digest := splitImage(o.Image)
	if digest != "" {
		return name + "@" + digest
	}
	return name + ":" + tag
}

// splitImage splits an image reference into repository, tag and digest; a
// bare tag ("v1.2.3") is a tag of ImageRepository.
func splitImage(ref string) (name, tag, digest string) {
	if n, d, ok := strings.Cut(ref, "@"); ok {
		return n, "", d
	}
	if !strings.ContainsAny(ref, "/:") {
		return ImageRepository, ref, ""
	}
	// A ':' after the last '/' separates the tag; one before it is a registry port.
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:], ""
	}
	return ref, "latest", ""
}
