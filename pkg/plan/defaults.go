package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// DefaultPool describes what is planned for when the input lacks it: the
// NodePool when the input defines none, and the DaemonSets every node runs
// when an offline input has none.
//
// With no flag set the pool is Karpenter's recommended general-purpose
// NodePool (aws/karpenter-provider-aws, examples/v1/general-purpose.yaml):
// amd64, linux, on-demand, instance-category In [c, m, r],
// instance-generation Gt 2. CapacityTypes, InstanceFamilies,
// Architectures and AllInstanceTypes widen it.
type DefaultPool struct {
	// CapacityTypes are on-demand and/or spot; on-demand when empty.
	CapacityTypes []string
	// InstanceFamilies, when set, name the families allowed (m7i, c7g, ...)
	// in place of the category and generation requirements.
	InstanceFamilies []string
	// Architectures are amd64 and/or arm64; amd64 when empty, unless
	// InstanceFamilies or AllInstanceTypes say which types are allowed:
	// then every architecture.
	Architectures []string
	// AllInstanceTypes allows every type of the catalog (of every
	// category, generation and architecture, burstable ones included).
	AllInstanceTypes bool
	// NoEKSDaemonSets plans an offline input that has no DaemonSets
	// without the ones EKS runs on every node (EKSDaemonSets).
	NoEKSDaemonSets bool
}

// Validate checks the capacity types and architectures named.
func (d *DefaultPool) Validate() error {
	for _, ct := range d.CapacityTypes {
		if ct != cloud.CapacityTypeOnDemand && ct != cloud.CapacityTypeSpot {
			return fmt.Errorf("--capacity-type %q: must be on-demand or spot", ct)
		}
	}
	for _, a := range d.Architectures {
		if a != "amd64" && a != "arm64" {
			return fmt.Errorf("--arch %q: must be amd64 or arm64", a)
		}
	}
	return nil
}

// generalPurpose is true when the catalog's types carry the category and
// generation labels Karpenter's recommended pool selects on: AWS names do,
// a file of types named otherwise may not, and then the pool allows every
// type rather than none.
func generalPurpose(types []solver.InstanceType) bool {
	return slices.ContainsFunc(types, func(t solver.InstanceType) bool {
		return t.Labels[cloud.LabelInstanceCategory] != "" && t.Labels[cloud.LabelInstanceGen] != ""
	})
}

// Pool returns the default pool for a catalog of types, and one sentence
// saying what it allows.
func (d *DefaultPool) Pool(types []solver.InstanceType) (solver.Pool, string, error) {
	if err := d.Validate(); err != nil {
		return solver.Pool{}, "", err
	}
	cts := d.CapacityTypes
	if len(cts) == 0 {
		cts = []string{cloud.CapacityTypeOnDemand}
	}
	pool := solver.Pool{
		Name:         "default",
		Labels:       map[string]string{},
		Requirements: []solver.Requirement{{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: slices.Clone(cts)}},
	}
	allows := []string{strings.Join(cts, "/")}
	general := !d.AllInstanceTypes && len(d.InstanceFamilies) == 0 && generalPurpose(types)
	archs := d.Architectures
	if len(archs) == 0 && general {
		archs = []string{"amd64"}
	}
	if len(archs) > 0 {
		pool.Requirements = append(pool.Requirements, solver.Requirement{Key: cloud.LabelArch, Operator: solver.OpIn, Values: slices.Clone(archs)})
		allows = append(allows, strings.Join(archs, "/"))
	} else {
		allows = append(allows, "every architecture")
	}
	switch {
	case general:
		pool.Requirements = append(pool.Requirements,
			solver.Requirement{Key: cloud.LabelOS, Operator: solver.OpIn, Values: []string{"linux"}},
			solver.Requirement{Key: cloud.LabelInstanceCategory, Operator: solver.OpIn, Values: slices.Clone(karpenter.GeneralPurposeCategories)},
			solver.Requirement{Key: cloud.LabelInstanceGen, Operator: solver.OpGt, Values: []string{karpenter.GeneralPurposeGenerationAbove}})
		allows = append(allows, "linux", "instance categories "+strings.Join(karpenter.GeneralPurposeCategories, "/"), "generation > "+karpenter.GeneralPurposeGenerationAbove)
	case len(d.InstanceFamilies) > 0:
		pool.Requirements = append(pool.Requirements, solver.Requirement{Key: cloud.LabelInstanceFamily, Operator: solver.OpIn, Values: slices.Clone(d.InstanceFamilies)})
		allows = append(allows, "families "+strings.Join(d.InstanceFamilies, ", "))
	}
	var what string
	switch {
	case general:
		what = "Karpenter's recommended general-purpose NodePool (" + strings.Join(allows, ", ") + "); --arch, --capacity-type, --instance-family or --all-instance-types widen it"
	case !d.AllInstanceTypes && len(d.InstanceFamilies) == 0:
		what = "every instance type (" + strings.Join(allows, ", ") + "): the catalog's types carry no instance-category labels for Karpenter's general-purpose requirements"
	case len(d.InstanceFamilies) > 0:
		what = "a NodePool of " + strings.Join(allows, ", ")
	default:
		what = "every instance type (" + strings.Join(allows, ", ") + "; --all-instance-types)"
	}
	return pool, what, nil
}

// Widening is a wider default pool the plan is compared with.
type Widening struct {
	// What is allowed beyond the pool, as advice names it: "arm64".
	What string
	// Flags are the flags that plan with it.
	Flags string
	Pool  DefaultPool
}

// Widenings are the wider pools worth comparing the default pool with, on
// a catalog of types: arm64 besides amd64, spot besides on-demand, and
// every category and generation, each on its own. A pool that already
// allows one is not widened by it, and a catalog without category labels
// (whose default pool allows every type already) is widened to spot only.
func (d *DefaultPool) Widenings(types []solver.InstanceType) []Widening {
	if d.AllInstanceTypes {
		return nil
	}
	var out []Widening
	general := len(d.InstanceFamilies) == 0 && generalPurpose(types)
	if general && !slices.Contains(d.Architectures, "arm64") {
		w := *d
		w.Architectures = []string{"amd64", "arm64"}
		out = append(out, Widening{What: "arm64", Flags: "--arch amd64,arm64", Pool: w})
	}
	if !slices.Contains(d.CapacityTypes, cloud.CapacityTypeSpot) {
		w := *d
		w.CapacityTypes = []string{cloud.CapacityTypeOnDemand, cloud.CapacityTypeSpot}
		out = append(out, Widening{What: "spot", Flags: "--capacity-type on-demand,spot", Pool: w})
	}
	if general {
		w := *d
		w.AllInstanceTypes = true
		if len(w.Architectures) == 0 {
			w.Architectures = []string{"amd64"}
		}
		flags := "--all-instance-types --arch " + strings.Join(w.Architectures, ",")
		out = append(out, Widening{What: "every instance category and generation", Flags: flags, Pool: w})
	}
	return out
}

// EKSDaemonSets are the DaemonSets EKS runs on every node, with the
// requests they publish: aws-node (the VPC CNI: its aws-node and
// aws-eks-nodeagent containers request 25m CPU each;
// aws/amazon-vpc-cni-k8s config/master/aws-k8s-cni.yaml), kube-proxy (the
// EKS add-on requests 100m CPU) and eks-pod-identity-agent (its chart
// requests nothing; aws/eks-pod-identity-agent
// charts/eks-pod-identity-agent/values.yaml). None requests memory. They
// tolerate every taint, as their manifests do.
func EKSDaemonSets() []solver.DaemonSet {
	ds := func(name string, cpu int64) solver.DaemonSet {
		var r solver.Resources
		r[solver.CPU], r[solver.Pods] = cpu, 1
		return solver.DaemonSet{Namespace: "kube-system", Name: name, Requests: r, Tolerations: []solver.Toleration{{Operator: "Exists"}}}
	}
	return []solver.DaemonSet{ds("aws-node", 50), ds("kube-proxy", 100), ds("eks-pod-identity-agent", 0)}
}
