package aws

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// bootstrap is what a node needs to join the cluster.
type bootstrap struct {
	ClusterName     string
	ClusterEndpoint string
	ClusterCABundle string // base64 PEM
	ServiceCIDR     string
	Labels          map[string]string
	Taints          []corev1.Taint
	// MaxPods is the node's pod limit as the planner counts it: the node
	// class's kubelet maxPods and podsPerCore applied.
	MaxPods int64
	// Kubelet is the node class's kubelet settings; MaxPods stands for its
	// maxPods.
	Kubelet *v1alpha1.KubeletConfiguration
	// Custom is the EC2NodeClass's own user data, merged in.
	Custom string
}

var (
	clusterNamePattern = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$`)
	base64Pattern      = regexp.MustCompile(`^[A-Za-z0-9+/=]*$`)
	cidrPattern        = regexp.MustCompile(`^[0-9a-fA-F:.]+/[0-9]{1,3}$`)
)

// validate refuses anything that could break out of the quoting of the
// generated scripts and documents: the values are put inside shell single
// quotes, TOML basic strings and YAML plain scalars.
func (b *bootstrap) validate() error {
	if !clusterNamePattern.MatchString(b.ClusterName) {
		return fmt.Errorf("cluster name %q is not a valid EKS cluster name", b.ClusterName)
	}
	if b.ClusterEndpoint != "" && (!strings.HasPrefix(b.ClusterEndpoint, "https://") || strings.ContainsAny(b.ClusterEndpoint, "'\"\\ \t\r\n`$")) {
		return fmt.Errorf("cluster endpoint %q is not an https URL", b.ClusterEndpoint)
	}
	if !base64Pattern.MatchString(b.ClusterCABundle) {
		return fmt.Errorf("the cluster CA bundle is not base64")
	}
	if b.ServiceCIDR != "" && !cidrPattern.MatchString(b.ServiceCIDR) {
		return fmt.Errorf("service CIDR %q is not a CIDR", b.ServiceCIDR)
	}
	if err := validateKubelet(b.Kubelet); err != nil {
		return err
	}
	for k, v := range b.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label %s value %q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	for _, t := range b.Taints {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Errorf("taint key %q: %s", t.Key, strings.Join(errs, "; "))
		}
		if t.Value != "" {
			if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
				return fmt.Errorf("taint %s value %q: %s", t.Key, t.Value, strings.Join(errs, "; "))
			}
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return fmt.Errorf("taint %s: bad effect %q", t.Key, t.Effect)
		}
	}
	return nil
}

// kubeletLabels drops the labels the kubelet may not set on itself (the
// kubernetes.io and k8s.io namespaces, bar the allowed ones); the operator
// puts them on the Node when it registers.
func kubeletLabels(labels map[string]string) []string {
	var out []string
	for k, v := range labels {
		prefix, _, hasPrefix := strings.Cut(k, "/")
		if hasPrefix && (strings.HasSuffix(prefix, "kubernetes.io") || strings.HasSuffix(prefix, "k8s.io")) &&
			!strings.HasSuffix(prefix, "node.kubernetes.io") && prefix != "kubelet.kubernetes.io" {
			continue
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func taintFlags(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		if t.Value != "" {
			out = append(out, t.Key+"="+t.Value+":"+string(t.Effect))
		} else {
			out = append(out, t.Key+":"+string(t.Effect))
		}
	}
	return out
}

const mimeBoundary = "//"

// UserData renders the user data (base64 encoded, as launch templates take
// it) that joins a node of the family to the cluster.
func (b *bootstrap) UserData(family string) (string, error) {
	if err := b.validate(); err != nil {
		return "", err
	}
	var doc string
	switch family {
	case FamilyAL2023:
		doc = b.al2023()
	case FamilyAL2:
		doc = b.al2()
	case FamilyBottlerocket:
		doc = b.bottlerocket()
	case FamilyCustom:
		doc = b.Custom
	default:
		return "", fmt.Errorf("no user data for image family %q", family)
	}
	return base64.StdEncoding.EncodeToString([]byte(doc)), nil
}

func mimePart(contentType, body string) string {
	return "--" + mimeBoundary + "\nContent-Type: " + contentType + "\n\n" + strings.TrimRight(body, "\n") + "\n\n"
}

func (b *bootstrap) al2023() string {
	var nc strings.Builder
	nc.WriteString("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n")
	fmt.Fprintf(&nc, "    name: %s\n    apiServerEndpoint: %s\n    certificateAuthority: %s\n    cidr: %s\n",
		b.ClusterName, b.ClusterEndpoint, b.ClusterCABundle, b.ServiceCIDR)
	nc.WriteString("  kubelet:\n    config:\n")
	fmt.Fprintf(&nc, "      maxPods: %d\n", b.MaxPods)
	kubeletConfigYAML(&nc, "      ", b.Kubelet)
	if len(b.Taints) > 0 {
		nc.WriteString("      registerWithTaints:\n")
	}
	for _, t := range b.Taints {
		fmt.Fprintf(&nc, "      - {key: %s, value: %q, effect: %s}\n", t.Key, t.Value, t.Effect)
	}
	if labels := kubeletLabels(b.Labels); len(labels) > 0 {
		fmt.Fprintf(&nc, "    flags:\n    - --node-labels=%s\n", strings.Join(labels, ","))
	}
	var out strings.Builder
	out.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + mimeBoundary + "\"\n\n")
	if b.Custom != "" {
		ct := "text/x-shellscript; charset=\"us-ascii\""
		if strings.Contains(b.Custom, "node.eks.aws/") {
			ct = "application/node.eks.aws"
		}
		out.WriteString(mimePart(ct, b.Custom))
	}
	out.WriteString(mimePart("application/node.eks.aws", nc.String()))
	out.WriteString("--" + mimeBoundary + "--\n")
	return out.String()
}

func (b *bootstrap) al2() string {
	var sh strings.Builder
	sh.WriteString("#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&sh, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s' --b64-cluster-ca '%s' --use-max-pods false", b.ClusterName, b.ClusterEndpoint, b.ClusterCABundle)
	if b.Kubelet != nil && len(b.Kubelet.ClusterDNS) > 0 {
		// bootstrap.sh takes one cluster DNS address.
		fmt.Fprintf(&sh, " --dns-cluster-ip '%s'", b.Kubelet.ClusterDNS[0])
	}
	extra := []string{"--max-pods=" + strconv.FormatInt(b.MaxPods, 10)}
	extra = append(extra, kubeletFlags(b.Kubelet)...)
	if labels := kubeletLabels(b.Labels); len(labels) > 0 {
		extra = append(extra, "--node-labels="+strings.Join(labels, ","))
	}
	if taints := taintFlags(b.Taints); len(taints) > 0 {
		extra = append(extra, "--register-with-taints="+strings.Join(taints, ","))
	}
	fmt.Fprintf(&sh, " --kubelet-extra-args '%s'\n", strings.Join(extra, " "))
	var out strings.Builder
	out.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + mimeBoundary + "\"\n\n")
	if b.Custom != "" {
		out.WriteString(mimePart("text/x-shellscript; charset=\"us-ascii\"", b.Custom))
	}
	out.WriteString(mimePart("text/x-shellscript; charset=\"us-ascii\"", sh.String()))
	out.WriteString("--" + mimeBoundary + "--\n")
	return out.String()
}

// bottlerocket writes dotted keys before the class's own TOML, so that its
// tables (e.g. [settings.host-containers.admin]) still parse; it must not
// set the keys written here.
func (b *bootstrap) bottlerocket() string {
	var t strings.Builder
	fmt.Fprintf(&t, "settings.kubernetes.cluster-name = %q\n", b.ClusterName)
	fmt.Fprintf(&t, "settings.kubernetes.api-server = %q\n", b.ClusterEndpoint)
	fmt.Fprintf(&t, "settings.kubernetes.cluster-certificate = %q\n", b.ClusterCABundle)
	fmt.Fprintf(&t, "settings.kubernetes.max-pods = %d\n", b.MaxPods)
	bottlerocketKubelet(&t, b.Kubelet)
	for _, kv := range kubeletLabels(b.Labels) {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&t, "settings.kubernetes.node-labels.%q = %q\n", k, v)
	}
	byKey := map[string][]string{}
	var keys []string
	for _, taint := range b.Taints {
		if _, ok := byKey[taint.Key]; !ok {
			keys = append(keys, taint.Key)
		}
		byKey[taint.Key] = append(byKey[taint.Key], taint.Value+":"+string(taint.Effect))
	}
	for _, k := range keys {
		quoted := make([]string, len(byKey[k]))
		for i, v := range byKey[k] {
			quoted[i] = strconv.Quote(v)
		}
		fmt.Fprintf(&t, "settings.kubernetes.node-taints.%q = [%s]\n", k, strings.Join(quoted, ", "))
	}
	if b.Custom != "" {
		t.WriteString("\n" + b.Custom + "\n")
	}
	return t.String()
}
