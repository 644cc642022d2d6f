package aws

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Keys the kubelet settings may use, as the CRD allows them.
var (
	reservedKeys    = []string{"cpu", "memory", "ephemeral-storage", "pid"}
	evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}
	// kubeletValuePattern admits quantities and percentages only, so that
	// values cannot break the quoting of flags, YAML or TOML.
	kubeletValuePattern = regexp.MustCompile(`^[0-9]+([.][0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|%)?$`)
)

// validateKubelet refuses kubelet settings the CRD would refuse, should an
// object bypass its validation: unknown keys, values that are not
// quantities or percentages, and cluster DNS entries that are not IPs.
func validateKubelet(k *v1alpha1.KubeletConfiguration) error {
	if k == nil {
		return nil
	}
	check := func(path string, keys []string, m map[string]string) error {
		for key, v := range m {
			if !slices.Contains(keys, key) {
				return fmt.Errorf("kubelet %s: unsupported key %q", path, key)
			}
			if !kubeletValuePattern.MatchString(v) {
				return fmt.Errorf("kubelet %s.%s: %q is not a quantity or percentage", path, key, v)
			}
		}
		return nil
	}
	for _, c := range []struct {
		path string
		keys []string
		m    map[string]string
	}{
		{"systemReserved", reservedKeys, reservedMap(k.SystemReserved)},
		{"kubeReserved", reservedKeys, reservedMap(k.KubeReserved)},
		{"evictionHard", evictionSignals, thresholdMap(k.EvictionHard)},
		{"evictionSoft", evictionSignals, thresholdMap(k.EvictionSoft)},
	} {
		if err := check(c.path, c.keys, c.m); err != nil {
			return err
		}
	}
	for key := range k.EvictionSoftGracePeriod {
		if !slices.Contains(evictionSignals, key) {
			return fmt.Errorf("kubelet evictionSoftGracePeriod: unsupported key %q", key)
		}
	}
	for _, ip := range k.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("kubelet clusterDNS: %q is not an IP address", ip)
		}
	}
	return nil
}

func reservedMap(m map[string]v1alpha1.ReservedQuantity) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func thresholdMap(m map[string]v1alpha1.EvictionThreshold) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func graceMap(k *v1alpha1.KubeletConfiguration) map[string]string {
	out := make(map[string]string, len(k.EvictionSoftGracePeriod))
	for s, d := range k.EvictionSoftGracePeriod {
		out[s] = d.Duration.String()
	}
	return out
}

// joinPairs writes a map as the kubelet's flag syntax, keys sorted:
// k1<sep>v1,k2<sep>v2.
func joinPairs(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + sep + m[k]
	}
	return strings.Join(parts, ",")
}

// kubeletFlags are the kubelet command-line flags of the settings other
// than maxPods (which the caller writes): AL2's bootstrap.sh passes them
// through --kubelet-extra-args.
func kubeletFlags(k *v1alpha1.KubeletConfiguration) []string {
	if k == nil {
		return nil
	}
	var out []string
	if k.PodsPerCore != nil {
		out = append(out, "--pods-per-core="+strconv.Itoa(int(*k.PodsPerCore)))
	}
	for _, f := range []struct {
		flag, sep string
		m         map[string]string
	}{
		{"--system-reserved", "=", reservedMap(k.SystemReserved)},
		{"--kube-reserved", "=", reservedMap(k.KubeReserved)},
		{"--eviction-hard", "<", thresholdMap(k.EvictionHard)},
		{"--eviction-soft", "<", thresholdMap(k.EvictionSoft)},
		{"--eviction-soft-grace-period", "=", graceMap(k)},
	} {
		if len(f.m) > 0 {
			out = append(out, f.flag+"="+joinPairs(f.m, f.sep))
		}
	}
	if v := k.EvictionMaxPodGracePeriod; v != nil {
		out = append(out, "--eviction-max-pod-grace-period="+strconv.Itoa(int(*v)))
	}
	if v := k.ImageGCHighThresholdPercent; v != nil {
		out = append(out, "--image-gc-high-threshold="+strconv.Itoa(int(*v)))
	}
	if v := k.ImageGCLowThresholdPercent; v != nil {
		out = append(out, "--image-gc-low-threshold="+strconv.Itoa(int(*v)))
	}
	if v := k.CPUCFSQuota; v != nil {
		out = append(out, "--cpu-cfs-quota="+strconv.FormatBool(*v))
	}
	return out
}

// writeYAMLMap writes a map as an indented YAML block, keys sorted and
// values double-quoted.
func writeYAMLMap(b *strings.Builder, indent, name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, "%s%s:\n", indent, name)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "%s  %s: %q\n", indent, k, m[k])
	}
}

// kubeletConfigYAML writes the settings other than maxPods as fields of
// the kubelet's KubeletConfiguration (nodeadm's spec.kubelet.config).
func kubeletConfigYAML(b *strings.Builder, indent string, k *v1alpha1.KubeletConfiguration) {
	if k == nil {
		return
	}
	if k.PodsPerCore != nil {
		fmt.Fprintf(b, "%spodsPerCore: %d\n", indent, *k.PodsPerCore)
	}
	writeYAMLMap(b, indent, "systemReserved", reservedMap(k.SystemReserved))
	writeYAMLMap(b, indent, "kubeReserved", reservedMap(k.KubeReserved))
	writeYAMLMap(b, indent, "evictionHard", thresholdMap(k.EvictionHard))
	writeYAMLMap(b, indent, "evictionSoft", thresholdMap(k.EvictionSoft))
	writeYAMLMap(b, indent, "evictionSoftGracePeriod", graceMap(k))
	if v := k.EvictionMaxPodGracePeriod; v != nil {
		fmt.Fprintf(b, "%sevictionMaxPodGracePeriod: %d\n", indent, *v)
	}
	if v := k.ImageGCHighThresholdPercent; v != nil {
		fmt.Fprintf(b, "%simageGCHighThresholdPercent: %d\n", indent, *v)
	}
	if v := k.ImageGCLowThresholdPercent; v != nil {
		fmt.Fprintf(b, "%simageGCLowThresholdPercent: %d\n", indent, *v)
	}
	if v := k.CPUCFSQuota; v != nil {
		fmt.Fprintf(b, "%scpuCFSQuota: %t\n", indent, *v)
	}
	if len(k.ClusterDNS) > 0 {
		fmt.Fprintf(b, "%sclusterDNS:\n", indent)
		for _, ip := range k.ClusterDNS {
			fmt.Fprintf(b, "%s- %s\n", indent, ip)
		}
	}
}

// bottlerocketKubelet writes the settings other than maxPods as
// Bottlerocket's settings.kubernetes keys. Pods per core has no setting
// there; the planner's maxPods (written by the caller) already counts it.
func bottlerocketKubelet(b *strings.Builder, k *v1alpha1.KubeletConfiguration) {
	if k == nil {
		return
	}
	for _, f := range []struct {
		key string
		m   map[string]string
	}{
		{"system-reserved", reservedMap(k.SystemReserved)},
		{"kube-reserved", reservedMap(k.KubeReserved)},
		{"eviction-hard", thresholdMap(k.EvictionHard)},
		{"eviction-soft", thresholdMap(k.EvictionSoft)},
		{"eviction-soft-grace-period", graceMap(k)},
	} {
		keys := make([]string, 0, len(f.m))
		for key := range f.m {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			fmt.Fprintf(b, "settings.kubernetes.%s.%q = %q\n", f.key, key, f.m[key])
		}
	}
	if v := k.EvictionMaxPodGracePeriod; v != nil {
		fmt.Fprintf(b, "settings.kubernetes.eviction-max-pod-grace-period = %d\n", *v)
	}
	if v := k.ImageGCHighThresholdPercent; v != nil {
		fmt.Fprintf(b, "settings.kubernetes.image-gc-high-threshold-percent = %d\n", *v)
	}
	if v := k.ImageGCLowThresholdPercent; v != nil {
		fmt.Fprintf(b, "settings.kubernetes.image-gc-low-threshold-percent = %d\n", *v)
	}
	if v := k.CPUCFSQuota; v != nil {
		fmt.Fprintf(b, "settings.kubernetes.cpu-cfs-quota-enforced = %t\n", *v)
	}
	if len(k.ClusterDNS) > 0 {
		quoted := make([]string, len(k.ClusterDNS))
		for i, ip := range k.ClusterDNS {
			quoted[i] = strconv.Quote(ip)
		}
		fmt.Fprintf(b, "settings.kubernetes.cluster-dns-ip = [%s]\n", strings.Join(quoted, ", "))
	}
}
