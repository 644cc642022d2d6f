package cloud

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Kubelet is what of a node class's kubelet configuration changes a node's
// pod capacity and allocatable, in plain numbers. Its zero value changes
// nothing; it is comparable, so types planned with the same settings can be
// grouped by it.
type Kubelet struct {
	// MaxPods replaces the ENI-limited pod count (and a file type's pods).
	MaxPods Amount
	// PodsPerCore, when positive, caps pods at this many per vCPU.
	PodsPerCore int64
	// KubeReserved replaces EKS's kube-reserved, resource by resource.
	KubeReserved Reserved
	// SystemReserved is reserved on top of kube-reserved (EKS reserves
	// none).
	SystemReserved Reserved
	// EvictionMemory and EvictionNodefs are the memory.available and
	// nodefs.available thresholds: the larger of evictionHard (else the
	// kubelet's default, 100Mi and 10%) and evictionSoft, as Karpenter
	// counts them.
	EvictionMemory, EvictionNodefs Threshold
}

// Amount is a number that may be unset.
type Amount struct {
	Value int64
	Set   bool
}

// or returns the amount when set, else def.
func (a Amount) or(def int64) int64 {
	if a.Set {
		return a.Value
	}
	return def
}

// Reserved is a reservation of CPU (millicores), memory and ephemeral
// storage (bytes); each is set or not.
type Reserved struct {
	CPU, Memory, EphemeralStorage Amount
}

// Threshold is an eviction threshold: the larger of an absolute number of
// bytes and a percentage of the node's capacity (either may be zero).
type Threshold struct {
	Bytes   int64
	Percent float64
	Set     bool
}

// of returns the threshold for a capacity, or def when unset.
func (t Threshold) of(capacity, def int64) int64 {
	if !t.Set {
		return def
	}
	return max(t.Bytes, int64(math.Ceil(float64(capacity)*t.Percent/100)))
}

// atLeast returns the threshold that keeps back the more of t and o.
func (t Threshold) atLeast(o Threshold) Threshold {
	if !t.Set {
		return o
	}
	if !o.Set {
		return t
	}
	return Threshold{Bytes: max(t.Bytes, o.Bytes), Percent: max(t.Percent, o.Percent), Set: true}
}

// NewKubelet reads the settings of a node class's kubelet configuration
// that change allocatable. It returns nil when k is nil or sets none of
// them (clusterDNS, image GC and the like only reach the node).
func NewKubelet(k *v1alpha1.KubeletConfiguration) (*Kubelet, error) {
	if k == nil {
		return nil, nil
	}
	var out Kubelet
	if k.MaxPods != nil {
		if *k.MaxPods < 0 {
			return nil, fmt.Errorf("kubelet.maxPods: must not be negative (%d)", *k.MaxPods)
		}
		out.MaxPods = Amount{Value: int64(*k.MaxPods), Set: true}
	}
	if k.PodsPerCore != nil {
		if *k.PodsPerCore < 0 {
			return nil, fmt.Errorf("kubelet.podsPerCore: must not be negative (%d)", *k.PodsPerCore)
		}
		out.PodsPerCore = int64(*k.PodsPerCore)
	}
	var err error
	if out.KubeReserved, err = reserved("kubelet.kubeReserved", k.KubeReserved); err != nil {
		return nil, err
	}
	if out.SystemReserved, err = reserved("kubelet.systemReserved", k.SystemReserved); err != nil {
		return nil, err
	}
	for name := range k.EvictionHard {
		if !slices.Contains(evictionSignals, name) {
			return nil, fmt.Errorf("kubelet.evictionHard: unknown signal %q (want one of %s)", name, strings.Join(evictionSignals, ", "))
		}
	}
	for _, sig := range []struct {
		name string
		def  Threshold
		out  *Threshold
	}{
		{"memory.available", Threshold{Bytes: defaultEvictionMemory, Set: true}, &out.EvictionMemory},
		{"nodefs.available", Threshold{Percent: defaultEvictionNodefsPercent, Set: true}, &out.EvictionNodefs},
	} {
		hard, err := threshold("kubelet.evictionHard", sig.name, k.EvictionHard)
		if err != nil {
			return nil, err
		}
		soft, err := threshold("kubelet.evictionSoft", sig.name, k.EvictionSoft)
		if err != nil {
			return nil, err
		}
		if soft.Set {
			// The soft threshold is reached first when it is the
			// larger; against the default hard one when hard is unset.
			if !hard.Set {
				hard = sig.def
			}
			hard = hard.atLeast(soft)
		}
		*sig.out = hard
	}
	if out == (Kubelet{}) {
		return nil, nil
	}
	return &out, nil
}

// evictionSignals are the kubelet's eviction signals.
var evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}

// reserved reads a kubeReserved or systemReserved map.
func reserved(path string, m map[string]v1alpha1.ReservedQuantity) (Reserved, error) {
	var r Reserved
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p := path + "." + name
		q, err := resource.ParseQuantity(string(m[name]))
		if err != nil {
			return r, fmt.Errorf("%s: invalid quantity %q: %w", p, m[name], err)
		}
		if q.Sign() < 0 {
			return r, fmt.Errorf("%s: must not be negative (%s)", p, m[name])
		}
		switch name {
		case "cpu":
			r.CPU = Amount{Value: q.MilliValue(), Set: true}
		case "memory":
			r.Memory = Amount{Value: q.Value(), Set: true}
		case "ephemeral-storage":
			r.EphemeralStorage = Amount{Value: q.Value(), Set: true}
		case "pid":
			// Pids limit no request of a pod.
		default:
			return r, fmt.Errorf("%s: unsupported resource (want cpu, memory, ephemeral-storage or pid)", path)
		}
	}
	return r, nil
}

// threshold reads one signal's eviction threshold from an evictionHard or
// evictionSoft map: a percentage such as "5%" or a quantity such as 500Mi.
func threshold(path, signal string, m map[string]v1alpha1.EvictionThreshold) (Threshold, error) {
	v, ok := m[signal]
	if !ok {
		return Threshold{}, nil
	}
	p := path + "." + signal
	if pct, isPct := strings.CutSuffix(string(v), "%"); isPct {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || f < 0 || f > 100 {
			return Threshold{}, fmt.Errorf("%s: want a percentage from 0%% to 100%%, got %q", p, v)
		}
		return Threshold{Percent: f, Set: true}, nil
	}
	q, err := resource.ParseQuantity(string(v))
	if err != nil || q.Sign() < 0 {
		return Threshold{}, fmt.Errorf("%s: want a quantity such as 500Mi or a percentage such as 5%%, got %q", p, v)
	}
	return Threshold{Bytes: q.Value(), Set: true}, nil
}
