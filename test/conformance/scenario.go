// Package conformance runs scenarios written from Karpenter's and
// kube-scheduler's own scheduling tests through the real kubectl-rightsize
// binary (`explain -f DIR -o json`) and judges every plan with code of its
// own: Kubernetes' helpers for node affinity and taints, plain counting for
// topology spread, pod (anti-)affinity, host ports and resources. It shares
// nothing with the solver's topology logic, so a plan the solver believes
// in is checked by a second opinion.
package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// suiteFile is one testdata file: the scenarios written from one upstream
// test file.
type suiteFile struct {
	// Source names the upstream repository and file the scenarios come from.
	Source string `json:"source"`
	// InstanceTypes names the default instance-type file (testdata/types/NAME.yaml).
	InstanceTypes string     `json:"instanceTypes"`
	Scenarios     []scenario `json:"scenarios"`
	// Templates holds YAML anchors the scenarios refer to; it is not read.
	Templates any `json:"templates,omitempty"`
}

// scenario is one input and what a correct plan must show.
type scenario struct {
	Name string `json:"name"`
	// Source is the upstream test case: Describe/Context path and It(...)
	// or the table entry's name.
	Source string `json:"source"`
	// Note says how the expectation differs from upstream's (a property
	// instead of Karpenter's exact node count, for instance).
	Note string `json:"note,omitempty"`
	// KnownGap says why the solver does not meet the scenario yet.
	KnownGap      string     `json:"knownGap,omitempty"`
	InstanceTypes string     `json:"instanceTypes,omitempty"`
	Pools         []pool     `json:"pools,omitempty"`
	Workloads     []workload `json:"workloads"`
	Expect        expect     `json:"expect"`
	// Args are extra explain flags.
	Args []string `json:"args,omitempty"`

	file string
}

// pool is a Karpenter v1 NodePool in short form.
type pool struct {
	Name          string                       `json:"name"`
	Weight        *int32                       `json:"weight,omitempty"`
	Labels        map[string]string            `json:"labels,omitempty"`
	Requirements  []requirement                `json:"requirements,omitempty"`
	Taints        []v1.Taint                   `json:"taints,omitempty"`
	StartupTaints []v1.Taint                   `json:"startupTaints,omitempty"`
	Limits        map[string]resource.Quantity `json:"limits,omitempty"`
}

// requirement is a NodePool requirement: a node selector requirement with
// Karpenter's minValues.
type requirement struct {
	v1.NodeSelectorRequirement `json:",inline"`
	MinValues                  *int `json:"minValues,omitempty"`
}

// selectorRequirements drops minValues.
func (p *pool) selectorRequirements() []v1.NodeSelectorRequirement {
	out := make([]v1.NodeSelectorRequirement, len(p.Requirements))
	for i, r := range p.Requirements {
		out[i] = r.NodeSelectorRequirement
	}
	return out
}

// workload is Replicas identical pods: name-0, name-1, ...
type workload struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Replicas  *int              `json:"replicas,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Requests of the one container (cpu, memory, any resource).
	Requests map[string]resource.Quantity `json:"requests,omitempty"`
	// Spec is a PodSpec fragment: nodeSelector, affinity, tolerations,
	// topologySpreadConstraints, containers (replacing the default one), ...
	Spec v1.PodSpec `json:"spec,omitempty"`
}

func (w *workload) replicas() int {
	if w.Replicas == nil {
		return 1
	}
	return *w.Replicas
}

func (w *workload) namespace() string {
	if w.Namespace == "" {
		return "default"
	}
	return w.Namespace
}

// expect is what a correct plan shows beyond the generic checks every plan
// gets (every pod accounted for once; every placed pod allowed on its node
// by node affinity, taints, resources, host ports, topology spread and pod
// (anti-)affinity; every node a real offering its pool allows).
type expect struct {
	// Pending maps a workload to how many of its pods stay pending ("all",
	// "any" or a number); workloads not named must be placed in full.
	Pending map[string]string `json:"pending,omitempty"`
	// Reason maps a workload to a phrase its pending pods' reason contains.
	Reason map[string]string `json:"reason,omitempty"`
	// Domains are expected pod counts per topology domain.
	Domains []domainExpect `json:"domains,omitempty"`
	// Labels maps a workload to labels every node of its pods carries;
	// NotLabels to labels none of them carries (key=value, or key alone for
	// any value).
	Labels    map[string]map[string]string `json:"labels,omitempty"`
	NotLabels map[string][]string          `json:"notLabels,omitempty"`
	// InstanceTypes maps a workload to the types its nodes may be.
	InstanceTypes map[string][]string `json:"instanceTypes,omitempty"`
	// Nodes, MinNodes and MaxNodes bound the number of planned nodes.
	Nodes    *int `json:"nodes,omitempty"`
	MinNodes *int `json:"minNodes,omitempty"`
	MaxNodes *int `json:"maxNodes,omitempty"`
	// SameNode lists groups of workloads whose pods all share one node;
	// NodesOf bounds the number of nodes a workload uses.
	SameNode [][]string     `json:"sameNode,omitempty"`
	NodesOf  map[string]int `json:"nodesOf,omitempty"`
	// MaxPricePerHour bounds the plan's price: the cheapest answer where
	// Karpenter names one instance type among equally priced ones.
	MaxPricePerHour *float64 `json:"maxPricePerHour,omitempty"`
	// Taints maps a workload to taint keys every node of its pods carries.
	Taints map[string][]string `json:"taints,omitempty"`
}

// domainExpect: the pods of Workloads over the domains of Key, counts
// sorted descending (domains without pods left out), or bounds.
type domainExpect struct {
	Key       string   `json:"key"`
	Workloads []string `json:"workloads"`
	Counts    []int    `json:"counts,omitempty"`
	// MaxSkew bounds max-min over the domains listed in Of (all domains
	// with pods when Of is empty).
	MaxSkew *int     `json:"maxSkew,omitempty"`
	Of      []string `json:"of,omitempty"`
	// Min is the fewest distinct domains the pods must use.
	MinDomains int `json:"minDomains,omitempty"`
	// Only lists the domains the pods may use.
	Only []string `json:"only,omitempty"`
}

// loadSuites reads every testdata/*.yaml file.
func loadSuites(dir string) ([]scenario, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var all []scenario
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s suiteFile
		if err := yaml.UnmarshalStrict(data, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if s.Source == "" {
			return nil, fmt.Errorf("%s: source: required", f)
		}
		for _, sc := range s.Scenarios {
			if sc.Name == "" || sc.Source == "" {
				return nil, fmt.Errorf("%s: scenario %q: name and source are required", f, sc.Name)
			}
			if prev, dup := seen[sc.Name]; dup {
				return nil, fmt.Errorf("%s: scenario %q also in %s", f, sc.Name, prev)
			}
			seen[sc.Name] = f
			if sc.InstanceTypes == "" {
				sc.InstanceTypes = s.InstanceTypes
			}
			if sc.InstanceTypes == "" {
				return nil, fmt.Errorf("%s: scenario %q: no instance types", f, sc.Name)
			}
			if len(sc.Pools) == 0 {
				sc.Pools = []pool{{Name: "default"}}
			}
			sc.file = filepath.Base(f)
			all = append(all, sc)
		}
	}
	return all, nil
}

// pods expands the workloads into Pods.
func (sc *scenario) pods() []*v1.Pod {
	var out []*v1.Pod
	for wi := range sc.Workloads {
		w := &sc.Workloads[wi]
		for i := range w.replicas() {
			spec := *w.Spec.DeepCopy()
			if len(spec.Containers) == 0 {
				req := v1.ResourceList{}
				for k, q := range w.Requests {
					req[v1.ResourceName(k)] = q
				}
				spec.Containers = []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: req, Limits: extendedLimits(req)}}}
			}
			out = append(out, &v1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-" + strconv.Itoa(i), Namespace: w.namespace(), Labels: w.Labels},
				Spec:       spec,
			})
		}
	}
	return out
}

// writeInput writes the scenario's NodePools and pods as one manifest file
// in a new directory dir/in, the input both front ends read with -f, and
// returns that directory.
func (sc *scenario) writeInput(dir string) (string, error) {
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		return "", err
	}
	var docs []any
	for i := range sc.Pools {
		docs = append(docs, sc.Pools[i].nodePool())
	}
	for _, p := range sc.pods() {
		docs = append(docs, p)
	}
	var buf bytes.Buffer
	for _, d := range docs {
		data, err := json.Marshal(d)
		if err != nil {
			return "", fmt.Errorf("%s: %w", sc.Name, err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
		buf.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(in, "input.yaml"), buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return in, nil
}

// typesFile is the absolute path of the scenario's --instance-types file.
func (sc *scenario) typesFile() (string, error) {
	return filepath.Abs(filepath.Join("testdata", "types", sc.InstanceTypes+".yaml"))
}

// extendedLimits: extended resources must have limits equal to requests.
func extendedLimits(req v1.ResourceList) v1.ResourceList {
	var lim v1.ResourceList
	for k, q := range req {
		switch k {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
			continue
		}
		if lim == nil {
			lim = v1.ResourceList{}
		}
		lim[k] = q
	}
	return lim
}

// nodePool renders a pool as a karpenter.sh/v1 NodePool.
func (p *pool) nodePool() map[string]any {
	spec := map[string]any{}
	tmplSpec := map[string]any{"requirements": orEmpty(p.Requirements)}
	if len(p.Taints) > 0 {
		tmplSpec["taints"] = p.Taints
	}
	if len(p.StartupTaints) > 0 {
		tmplSpec["startupTaints"] = p.StartupTaints
	}
	tmpl := map[string]any{"spec": tmplSpec}
	if len(p.Labels) > 0 {
		tmpl["metadata"] = map[string]any{"labels": p.Labels}
	}
	spec["template"] = tmpl
	if p.Weight != nil {
		spec["weight"] = *p.Weight
	}
	if len(p.Limits) > 0 {
		spec["limits"] = p.Limits
	}
	return map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": p.Name},
		"spec":     spec,
	}
}

func orEmpty(r []requirement) []requirement {
	if r == nil {
		return []requirement{}
	}
	return r
}
