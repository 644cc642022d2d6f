package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// catalogTypes are the embedded catalog's us-east-1 types, as explain
// plans with them.
func catalogTypes(t *testing.T) []solver.InstanceType {
	t.Helper()
	types, _, err := (&Catalog{Region: DefaultRegion}).InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// allowed returns the names of the types and capacity types a pool's
// requirements allow.
func allowed(pool solver.Pool, types []solver.InstanceType) (names []string, capacityTypes map[string]bool) {
	capacityTypes = map[string]bool{}
	for _, it := range types {
		for _, o := range it.Offerings {
			labels := solver.MapLabels{}
			for k, v := range it.Labels {
				labels[k] = v
			}
			labels[solver.LabelZone], labels[solver.LabelCapacityType] = o.Zone, o.CapacityType
			ok := true
			for _, r := range pool.Requirements {
				ok = ok && r.Matches(labels)
			}
			if ok {
				if !slices.Contains(names, it.Name) {
					names = append(names, it.Name)
				}
				capacityTypes[o.CapacityType] = true
			}
		}
	}
	return names, capacityTypes
}

func TestDefaultPool(t *testing.T) {
	types := catalogTypes(t)
	tests := []struct {
		name string
		d    DefaultPool
		// allow and deny are types the pool must and must not allow.
		allow, deny []string
		spot        bool
		what        string
	}{
		{"Karpenter's general-purpose pool", DefaultPool{},
			[]string{"m7i.large", "c6a.12xlarge", "r5.large", "m5.large"},
			[]string{"m7g.large", "t3.large", "t4g.micro", "x2idn.16xlarge", "p4d.24xlarge", "hpc7a.96xlarge", "c7g.large"},
			false, "Karpenter's recommended general-purpose NodePool (on-demand, amd64, linux, instance categories c/m/r, generation > 2)"},
		{"arm64 too", DefaultPool{Architectures: []string{"amd64", "arm64"}},
			[]string{"m7i.large", "m7g.large", "c7g.large"}, []string{"t4g.micro", "x2gd.large"}, false, "amd64/arm64"},
		{"spot too", DefaultPool{CapacityTypes: []string{"on-demand", "spot"}}, []string{"m7i.large"}, []string{"m7g.large"}, true, "on-demand/spot"},
		{"families in place of categories", DefaultPool{InstanceFamilies: []string{"m7g", "t3"}},
			[]string{"m7g.large", "t3.large"}, []string{"m7i.large"}, false, "a NodePool of on-demand, every architecture, families m7g, t3"},
		{"every type", DefaultPool{AllInstanceTypes: true},
			[]string{"m7i.large", "m7g.large", "t4g.micro", "x2idn.16xlarge"}, nil, false, "every instance type (on-demand, every architecture; --all-instance-types)"},
		{"every amd64 type", DefaultPool{AllInstanceTypes: true, Architectures: []string{"amd64"}},
			[]string{"t3.large", "x2idn.16xlarge"}, []string{"m7g.large", "t4g.micro"}, false, "every instance type (on-demand, amd64; --all-instance-types)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool, what, err := tc.d.Pool(types)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(what, tc.what) {
				t.Errorf("described as %q, want it to contain %q", what, tc.what)
			}
			names, cts := allowed(pool, types)
			for _, n := range tc.allow {
				if !slices.Contains(names, n) {
					t.Errorf("%s not allowed (requirements %+v)", n, pool.Requirements)
				}
			}
			for _, n := range tc.deny {
				if slices.Contains(names, n) {
					t.Errorf("%s allowed (requirements %+v)", n, pool.Requirements)
				}
			}
			if cts[cloud.CapacityTypeSpot] != tc.spot || !cts[cloud.CapacityTypeOnDemand] {
				t.Errorf("capacity types %v, want spot %v and on-demand", cts, tc.spot)
			}
		})
	}
}

func TestDefaultPoolWithoutCategoryLabels(t *testing.T) {
	// A file of types named outside AWS's scheme has no category labels:
	// the default pool then allows every type, not none, and says why.
	var c solver.Resources
	c[solver.CPU], c[solver.Memory], c[solver.Pods] = 2000, 8*gi, 29
	small := []solver.InstanceType{{Name: "small", Capacity: c, Labels: map[string]string{solver.LabelInstanceType: "small"},
		Offerings: []solver.Offering{{Zone: "a", CapacityType: "on-demand", Price: 0.1}}}}
	pool, what, err := (&DefaultPool{}).Pool(small)
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := allowed(pool, small); !slices.Equal(names, []string{"small"}) {
		t.Errorf("allowed %v, want [small] (requirements %+v)", names, pool.Requirements)
	}
	if !strings.Contains(what, "carry no instance-category labels") {
		t.Errorf("described as %q", what)
	}
}

func TestDefaultPoolValidate(t *testing.T) {
	tests := []struct {
		d    DefaultPool
		want string
	}{
		{DefaultPool{}, ""},
		{DefaultPool{CapacityTypes: []string{"spot"}, Architectures: []string{"arm64", "amd64"}}, ""},
		{DefaultPool{CapacityTypes: []string{"reserved"}}, `--capacity-type "reserved": must be on-demand or spot`},
		{DefaultPool{Architectures: []string{"x86_64"}}, `--arch "x86_64": must be amd64 or arm64`},
	}
	for _, tc := range tests {
		err := tc.d.Validate()
		if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.d, err, tc.want)
		}
	}
}

func TestWidenings(t *testing.T) {
	aws := catalogTypes(t)
	var c solver.Resources
	c[solver.CPU], c[solver.Memory], c[solver.Pods] = 2000, 8*gi, 29
	unlabelled := []solver.InstanceType{{Name: "small", Capacity: c, Labels: map[string]string{solver.LabelInstanceType: "small"}}}
	tests := []struct {
		name  string
		d     DefaultPool
		types []solver.InstanceType
		want  []string
	}{
		{"the default", DefaultPool{}, aws, []string{"arm64", "spot", "every instance category and generation"}},
		{"arm64 and spot allowed", DefaultPool{Architectures: []string{"arm64"}, CapacityTypes: []string{"spot"}}, aws, []string{"every instance category and generation"}},
		{"families", DefaultPool{InstanceFamilies: []string{"m7i"}}, aws, []string{"spot"}},
		{"every type", DefaultPool{AllInstanceTypes: true}, aws, nil},
		{"a catalog without category labels", DefaultPool{}, unlabelled, []string{"spot"}},
	}
	for _, tc := range tests {
		var got []string
		for _, w := range tc.d.Widenings(tc.types) {
			got = append(got, w.What)
			if err := w.Pool.Validate(); err != nil {
				t.Errorf("%s: widening %s: %v", tc.name, w.What, err)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: widenings %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBuildEKSDaemonSets(t *testing.T) {
	pods := []solver.Pod{{Namespace: "default", Name: "a", Owner: "Pod/a"}}
	own := []solver.DaemonSet{{Namespace: "kube-system", Name: "cilium"}}
	embedded, file := &Catalog{Region: DefaultRegion}, &Catalog{InstanceTypesFile: "types.yaml"}
	tests := []struct {
		name string
		in   Input
		want []string
		eks  bool
	}{
		{"offline, no DaemonSets, the embedded catalog", Input{Manifests: &snapshot.Manifests{Pods: pods}, Catalog: embedded, Default: &DefaultPool{}},
			[]string{"aws-node", "kube-proxy", "eks-pod-identity-agent"}, true},
		{"--no-eks-daemonsets", Input{Manifests: &snapshot.Manifests{Pods: pods}, Catalog: embedded, Default: &DefaultPool{NoEKSDaemonSets: true}}, nil, false},
		{"the input's own DaemonSets", Input{Manifests: &snapshot.Manifests{Pods: pods, DaemonSets: own}, Catalog: embedded, Default: &DefaultPool{}}, []string{"cilium"}, false},
		{"a file of instance types", Input{Manifests: &snapshot.Manifests{Pods: pods}, Catalog: file, Default: &DefaultPool{}}, nil, false},
		{"a live cluster", Input{Cluster: &snapshot.Cluster{Manifests: snapshot.Manifests{Pods: pods}}, Catalog: embedded, Default: &DefaultPool{}}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Build(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ds := range r.Problem.DaemonSets {
				got = append(got, ds.Name)
			}
			if !slices.Equal(got, tc.want) || r.EKSDaemonSets != tc.eks {
				t.Errorf("DaemonSets %v (EKS %v), want %v (EKS %v)", got, r.EKSDaemonSets, tc.want, tc.eks)
			}
		})
	}
}

func TestEKSDaemonSetsRequests(t *testing.T) {
	var sum solver.Resources
	for _, ds := range EKSDaemonSets() {
		sum = sum.Add(ds.Requests)
		if len(ds.Tolerations) != 1 || ds.Tolerations[0].Operator != "Exists" {
			t.Errorf("%s tolerates %+v, want every taint", ds.Name, ds.Tolerations)
		}
	}
	if sum[solver.CPU] != 150 || sum[solver.Memory] != 0 || sum[solver.Pods] != 3 {
		t.Errorf("requests %v, want 150m CPU, no memory, 3 pods", sum)
	}
}

func TestEmbeddedCatalogPricesBurstableTypesSustained(t *testing.T) {
	// The embedded catalog lists a t4g.medium at $0.0336/h; planned, it
	// also pays its surplus credits at full CPU, 2 vCPUs × (1 − 0.20) ×
	// $0.04. Other types keep their list price.
	want := map[string]float64{"t4g.medium": 0.0976, "m7i.large": 0.1008}
	for _, it := range catalogTypes(t) {
		w, ok := want[it.Name]
		if !ok {
			continue
		}
		delete(want, it.Name)
		for _, o := range it.Offerings {
			if o.CapacityType == cloud.CapacityTypeOnDemand && o.Price != w {
				t.Errorf("%s on-demand in %s: $%v, want $%v", it.Name, o.Zone, o.Price, w)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("types missing from the catalog: %v", want)
	}
}
