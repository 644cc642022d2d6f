package snapshot

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestKarpenterV115PoolFields reads the fields Karpenter v1.14 and v1.15
// manifests use: requirement operators Gte and Lte, limits.nodes, a static
// pool's replicas and consolidationPolicy Balanced.
func TestKarpenterV115PoolFields(t *testing.T) {
	const head = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\n"
	tests := []struct {
		name      string
		spec      string
		wantReqs  []solver.Requirement
		wantNodes int64 // limits.nodes; 0 for none
		noPool    bool
		warning   string
		// wantPolicy is the pool's consolidation policy when set.
		wantPolicy string
		wantErr    string
	}{
		{name: "Gte and Lte become Gt and Lt", spec: `
  template:
    spec:
      requirements:
      - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Lte, values: ["6"]}
`, wantReqs: []solver.Requirement{
			{Key: "karpenter.k8s.aws/instance-cpu", Operator: "Gt", Values: []string{"3"}},
			{Key: "karpenter.k8s.aws/instance-generation", Operator: "Lt", Values: []string{"7"}},
		}},
		{name: "Gte needs an integer", spec: `
  template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: [many]}]}}
`, wantErr: `spec.template.spec.requirements[0]: operator Gte needs an integer, got "many"`},
		{name: "limits.nodes", spec: "  limits: {nodes: 3, cpu: 100}\n", wantNodes: 3},
		{name: "static pool is not planned", spec: "  replicas: 2\n  limits: {nodes: 4}\n", noPool: true,
			warning: `NodePool "np": spec.replicas: 2 makes a static NodePool: its operator keeps 2 nodes, which pods may use as kept capacity, but the plan launches no node for it`},
		{name: "static pool with a cpu limit", spec: "  replicas: 2\n  limits: {cpu: 4}\n",
			wantErr: "spec.limits.cpu: only limits.nodes is allowed on a static NodePool"},
		{name: "Balanced", spec: "  disruption: {consolidationPolicy: Balanced}\n", wantPolicy: solver.Balanced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "pool.yaml"), head+"spec:\n"+tt.spec)
			writeFile(t, filepath.Join(dir, "pod.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
			m, err := Read([]string{dir}, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.warning != "" && !hasWarning(m, "pool.yaml: document 1: ", tt.warning) {
				t.Errorf("no warning %q in %q", tt.warning, m.Warnings)
			}
			if tt.noPool {
				if len(m.Pools) != 0 {
					t.Fatalf("pools = %+v, want none", m.Pools)
				}
				return
			}
			if len(m.Pools) != 1 {
				t.Fatalf("pools = %d", len(m.Pools))
			}
			pool := m.Pools[0]
			if tt.wantPolicy != "" && pool.Consolidation.Policy != tt.wantPolicy {
				t.Errorf("policy = %q, want %q", pool.Consolidation.Policy, tt.wantPolicy)
			}
			if tt.wantReqs != nil && !reflect.DeepEqual(pool.Requirements, tt.wantReqs) {
				t.Errorf("requirements = %+v, want %+v", pool.Requirements, tt.wantReqs)
			}
			var nodes int64
			for j, name := range m.ExtendedResources {
				if r := solver.NumFixedResources + j; name == NodeCountResource && pool.HasLimit[r] {
					nodes = pool.Limits[r]
				}
			}
			if nodes != tt.wantNodes {
				t.Errorf("limits.nodes = %d, want %d", nodes, tt.wantNodes)
			}
		})
	}
}

// TestPodDoNotDisrupt follows Karpenter's IsDoNotDisruptActive
// (kubernetes-sigs/karpenter pkg/utils/pod/scheduling.go): "true" always
// protects, a duration protects until the pod has run that long, anything
// else protects nothing.
func TestPodDoNotDisrupt(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	started := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	for _, tc := range []struct {
		name  string
		value string
		start *metav1.Time
		want  bool
	}{
		{"true", "true", started(time.Hour), true},
		{"duration not yet run", "5m", started(2 * time.Minute), true},
		{"duration run out", "5m", started(6 * time.Minute), false},
		{"duration, not started", "5m", nil, true},
		{"garbage", "soon", started(time.Minute), false},
		{"negative duration", "-5m", started(time.Minute), false},
		{"false", "false", started(time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationDoNotDisrupt: tc.value}},
				Status:     corev1.PodStatus{StartTime: tc.start},
			}
			if got := PodDoNotDisrupt(pod, now); got != tc.want {
				t.Errorf("PodDoNotDisrupt(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

// TestDecodeNodeOverlay reads karpenter.sh/v1alpha1 NodeOverlays and
// refuses what Karpenter's CRD validation refuses.
func TestDecodeNodeOverlay(t *testing.T) {
	const head = "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: o}\n"
	for _, tc := range []struct {
		name, spec string
		want       Overlay
		wantErr    string
	}{
		{name: "percentage", spec: "spec: {weight: 3, priceAdjustment: '+10%', requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['8']}]}",
			want: Overlay{Name: "o", Weight: 3, Price: "+10%", Requirements: []solver.Requirement{{Key: "karpenter.k8s.aws/instance-cpu", Operator: "Gt", Values: []string{"7"}}}}},
		{name: "price", spec: "spec: {price: '0.05'}", want: Overlay{Name: "o", Price: "0.05"}},
		{name: "capacity", spec: "spec: {capacity: {example.com/license: 2}}", want: Overlay{Name: "o", Capacity: map[string]int64{"example.com/license": 2}}},
		{name: "both prices", spec: "spec: {price: '1', priceAdjustment: '-1'}", wantErr: "spec.price and spec.priceAdjustment are both set"},
		{name: "more than all off", spec: "spec: {priceAdjustment: '-150%'}", wantErr: `spec.priceAdjustment: want an amount`},
		{name: "unsigned adjustment", spec: "spec: {priceAdjustment: '10%'}", wantErr: `spec.priceAdjustment: want an amount`},
		{name: "cpu capacity", spec: "spec: {capacity: {cpu: 2}}", wantErr: "spec.capacity.cpu: a NodeOverlay adds extended resources only"},
		{name: "weight", spec: "spec: {weight: 0}", wantErr: "spec.weight: must be between 1 and 10000"},
		{name: "unknown field", spec: "spec: {prices: '1'}", wantErr: `unknown field "spec.prices"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifests{Strict: true}
			err := Decode("o.yaml", []byte(head+tc.spec+"\n"), m)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Overlays) != 1 || !reflect.DeepEqual(m.Overlays[0], tc.want) {
				t.Errorf("overlays = %+v, want [%+v]", m.Overlays, tc.want)
			}
		})
	}
}

// TestAdjustedPrice follows Karpenter's AdjustedPrice
// (kubernetes-sigs/karpenter pkg/cloudprovider/types.go).
func TestAdjustedPrice(t *testing.T) {
	for _, tc := range []struct {
		change string
		want   float64
	}{
		{"", 0.2}, {"0.05", 0.05}, {"+0.1", 0.3}, {"-0.5", 0}, {"+10%", 0.22}, {"-15%", 0.17}, {"-100%", 0},
	} {
		if got := AdjustedPrice(0.2, tc.change); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("AdjustedPrice(0.2, %q) = %v, want %v", tc.change, got, tc.want)
		}
	}
}

// TestLiveNodeOverlays reads NodeOverlays as a cluster gives them: valid
// ones are kept, one Karpenter's validation would refuse is left out with
// a warning naming it.
func TestLiveNodeOverlays(t *testing.T) {
	cl := FromObjects(&Objects{NodeOverlays: []json.RawMessage{
		json.RawMessage(`{"apiVersion":"karpenter.sh/v1alpha1","kind":"NodeOverlay","metadata":{"name":"edp"},"spec":{"priceAdjustment":"-12%","futureField":1},"status":{"conditions":[]}}`),
		json.RawMessage(`{"apiVersion":"karpenter.sh/v1alpha1","kind":"NodeOverlay","metadata":{"name":"bad"},"spec":{"price":"1","priceAdjustment":"-1"}}`),
	}})
	if len(cl.Overlays) != 1 || cl.Overlays[0].Name != "edp" || cl.Overlays[0].Price != "-12%" {
		t.Errorf("overlays = %+v, want only edp at -12%%", cl.Overlays)
	}
	if !strings.Contains(strings.Join(cl.Warnings, "\n"), "NodeOverlay bad: left out: spec.price and spec.priceAdjustment are both set") {
		t.Errorf("warnings %q do not name the refused overlay", cl.Warnings)
	}
}

// TestEC2NodeClassV115Fields reads the EC2NodeClass fields added up to
// karpenter-provider-aws v1.15 without a strict-decoding failure, and warns
// about the ones that would change the plan but are not planned.
func TestEC2NodeClassV115Fields(t *testing.T) {
	in := `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: c}
spec:
  role: r
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
  capacityReservationSelectorTerms: [{id: cr-1234}]
  instanceStorePolicy: RAID0
  placementGroupSelector: {id: pg-0123}
  networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]
  ipPrefixCount: 1
  connectionTracking: {udpTimeout: 60}
  cpuOptions: {nestedVirtualization: enabled}
`
	m := &Manifests{Strict: true}
	if err := Decode("c.yaml", []byte(in), m); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(m.Warnings, "\n")
	// instanceStorePolicy is planned (the instance store becomes the
	// node's ephemeral storage, see storage.go): no warning.
	for _, field := range []string{"capacityReservationSelectorTerms", "cpuOptions"} {
		if !strings.Contains(all, `EC2NodeClass "c": spec.`+field+" is not planned: ") {
			t.Errorf("no warning for spec.%s in:\n%s", field, all)
		}
	}
	if len(m.Warnings) != 2 {
		t.Errorf("%d warnings, want 2 (launch settings do not change the plan):\n%s", len(m.Warnings), all)
	}
}
