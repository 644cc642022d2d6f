package snapshot

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func rsPool(name string, mod func(*v1alpha1.NodePool)) *v1alpha1.NodePool {
	np := &v1alpha1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{
			Spec: v1alpha1.NodeClaimTemplateSpec{NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "default"}},
		}},
	}
	if mod != nil {
		mod(np)
	}
	return np
}

func rsNode(name, providerID string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		},
	}
}

func rsClaim(name, pool, providerID, price string, initialized bool) *v1alpha1.NodeClaim {
	c := &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: pool}},
		Status: v1alpha1.NodeClaimStatus{ProviderID: providerID, PricePerHour: price, InstanceType: "m7i.large",
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}},
	}
	if initialized {
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}
	}
	return c
}

// TestRightsizePools checks how rightsize.dev NodePools and NodeClaims map
// onto the solver's pools and nodes, beside Karpenter's NodePools.
func TestRightsizePools(t *testing.T) {
	karpenterPool := json.RawMessage(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"general"},` +
		`"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"}}}}}`)
	percent := int32(10)
	tests := []struct {
		name      string
		objs      Objects
		check     func(t *testing.T, cl *Cluster)
		wantPools []string
		wantWarn  string
	}{
		{
			name: "a pool's labels, policy, consolidateAfter, minimum saving and budgets",
			objs: Objects{RightsizeInstalled: true, RightsizeNodePools: []*v1alpha1.NodePool{rsPool("web", func(np *v1alpha1.NodePool) {
				np.Spec.Template.Labels = map[string]string{"team": "web"}
				np.Spec.Disruption = v1alpha1.Disruption{ConsolidationPolicy: v1alpha1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: "30s",
					MinSaving: &v1alpha1.MinSaving{PerHour: "0.02", Percent: &percent},
					Budgets:   []v1alpha1.Budget{{Nodes: "1", Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonEmpty}}}}
			})}},
			wantPools: []string{"web"},
			check: func(t *testing.T, cl *Cluster) {
				p := cl.Pools[0]
				for k, v := range map[string]string{v1alpha1.LabelNodePool: "web", LabelNodePool: "web", "team": "web"} {
					if p.Labels[k] != v {
						t.Errorf("label %s = %q, want %q (labels %v)", k, p.Labels[k], v, p.Labels)
					}
				}
				want := solver.Consolidation{Policy: solver.WhenEmpty, After: 30 * time.Second, MinSaving: 0.02, MinSavingFraction: 0.1, MinSavingSet: true, NodesAllowed: -1}
				if p.Consolidation != want {
					t.Errorf("consolidation = %+v, want %+v", p.Consolidation, want)
				}
				if b := cl.Budgets["web"]; len(b) != 1 || b[0].Nodes != "1" || !slices.Equal(b[0].Reasons, []string{string(v1alpha1.DisruptionReasonEmpty)}) {
					t.Errorf("budgets = %+v", b)
				}
				if cl.PoolOwners["web"] != OwnerRightsize || cl.Rightsize.Pools["web"] == nil {
					t.Errorf("owners %v, pools %v: want web owned by rightsize.dev", cl.PoolOwners, cl.Rightsize.Pools)
				}
			},
		},
		{
			name: "Karpenter's and rightsize.dev's pools side by side",
			objs: Objects{NodePools: []json.RawMessage{karpenterPool}, KarpenterInstalled: true, RightsizeInstalled: true,
				RightsizeNodePools: []*v1alpha1.NodePool{rsPool("web", nil)}},
			wantPools: []string{"general", "web"},
			check: func(t *testing.T, cl *Cluster) {
				if cl.PoolOwners["general"] != OwnerKarpenter || cl.PoolOwners["web"] != OwnerRightsize {
					t.Errorf("owners = %v", cl.PoolOwners)
				}
			},
		},
		{
			name:      "a pool named like a Karpenter one replaces it",
			objs:      Objects{NodePools: []json.RawMessage{karpenterPool}, RightsizeNodePools: []*v1alpha1.NodePool{rsPool("general", nil)}},
			wantPools: []string{"general"},
			wantWarn:  "only the rightsize.dev one is planned",
			check: func(t *testing.T, cl *Cluster) {
				if cl.PoolOwners["general"] != OwnerRightsize || cl.Pools[0].Labels[v1alpha1.LabelNodePool] != "general" {
					t.Errorf("owners %v, labels %v: want the rightsize.dev pool", cl.PoolOwners, cl.Pools[0].Labels)
				}
			},
		},
		{
			name: "a rightsize.dev NodePool among raw NodePools (as a watcher passes them) is read as ours",
			objs: Objects{NodePools: []json.RawMessage{
				json.RawMessage(`{"apiVersion":"rightsize.dev/v1alpha1","kind":"NodePool","metadata":{"name":"general"},` +
					`"spec":{"template":{"spec":{"nodeClassRef":{"kind":"SimNodeClass","name":"default"}}},"disruption":{"minSaving":{"perHour":"0.05"}}},` +
					`"status":{"nodes":2,"costPerHour":"0.4"}}`),
				karpenterPool,
			}},
			wantPools: []string{"general"},
			wantWarn:  "only the rightsize.dev one is planned",
			check: func(t *testing.T, cl *Cluster) {
				p := cl.Pools[0]
				if cl.PoolOwners["general"] != OwnerRightsize || p.Labels[v1alpha1.LabelNodePool] != "general" || p.Consolidation.MinSaving != 0.05 {
					t.Errorf("owners %v, labels %v, consolidation %+v: want the rightsize.dev pool", cl.PoolOwners, p.Labels, p.Consolidation)
				}
				if cl.Rightsize.Pools["general"] == nil {
					t.Error("the pool is not kept for the operator's guards")
				}
			},
		},
		{
			name: "a pool being deleted is left out",
			objs: Objects{RightsizeNodePools: []*v1alpha1.NodePool{rsPool("old", func(np *v1alpha1.NodePool) {
				now := metav1.Now()
				np.DeletionTimestamp = &now
			}), rsPool("web", nil)}},
			wantPools: []string{"web"},
		},
		{
			name: "nodes take price, pool and initialization from their NodeClaims; pool usage is the claims' capacity",
			objs: Objects{
				RightsizeInstalled: true,
				RightsizeNodePools: []*v1alpha1.NodePool{rsPool("web", nil)},
				Nodes: []*corev1.Node{
					rsNode("a", "sim://a", map[string]string{solver.LabelInstanceType: "m7i.large"}),
					rsNode("b", "sim://b", map[string]string{LabelNodePool: "web"}),
					rsNode("c", "", nil),
				},
				NodeClaims: []*v1alpha1.NodeClaim{
					rsClaim("web-a", "web", "sim://a", "0.1008", true),
					rsClaim("web-b", "web", "sim://b", "bad", false),
					rsClaim("web-x", "web", "", "", false),
				},
			},
			wantPools: []string{"web"},
			check: func(t *testing.T, cl *Cluster) {
				a, b, c := cl.Nodes[0], cl.Nodes[1], cl.Nodes[2]
				if a.Price != 0.1008 || a.Pool != "web" || a.InFlight {
					t.Errorf("node a: price %v pool %q in flight %v; want 0.1008, web, false", a.Price, a.Pool, a.InFlight)
				}
				if b.Price != 0 || b.Pool != "web" || !b.InFlight || b.InstanceType != "m7i.large" {
					t.Errorf("node b: price %v pool %q in flight %v type %q; want 0, web, true, m7i.large", b.Price, b.Pool, b.InFlight, b.InstanceType)
				}
				if c.Pool != "" || c.Price != 0 {
					t.Errorf("node c has no claim: pool %q price %v", c.Pool, c.Price)
				}
				if got := cl.Pools[0].Used[solver.CPU]; got != 6000 {
					t.Errorf("pool usage %d mCPU, want 6000 (three claims of 2 CPU)", got)
				}
				if got := cl.Rightsize.InFlightClaims(); !slices.Equal(got, []string{"web-x (web)"}) {
					t.Errorf("in-flight claims = %v", got)
				}
				if len(cl.Rightsize.Claims) != 3 || len(cl.Rightsize.NodeObjects) != 3 {
					t.Errorf("kept %d claims and %d nodes, want 3 and 3", len(cl.Rightsize.Claims), len(cl.Rightsize.NodeObjects))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := FromObjects(&tc.objs)
			var names []string
			for _, p := range cl.Pools {
				names = append(names, p.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.wantPools) {
				t.Fatalf("pools = %v, want %v (warnings %v)", names, tc.wantPools, cl.Warnings)
			}
			if tc.wantWarn != "" && !slices.ContainsFunc(cl.Warnings, func(w string) bool { return strings.Contains(w, tc.wantWarn) }) {
				t.Errorf("warnings %v lack %q", cl.Warnings, tc.wantWarn)
			}
			if tc.wantWarn == "" && len(cl.Warnings) > 0 {
				t.Errorf("unexpected warnings %v", cl.Warnings)
			}
			if tc.check != nil {
				tc.check(t, cl)
			}
		})
	}
}
