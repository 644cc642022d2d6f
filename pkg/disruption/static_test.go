package disruption

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// TestStaticNodesAreNeverDisrupted checks the explicit guard on static
// NodePools (spec.replicas): their nodes are neither consolidated (empty
// or underutilized) nor replaced for drift or expiry here, even when the
// pool is in the solver's problem, as Karpenter's consolidation, emptiness
// and drift skip static candidates (kubernetes-sigs/karpenter
// pkg/controllers/disruption: Candidate.OwnedByStaticNodePool); the static
// controller replaces their drifted and expired nodes. Each case runs on
// the same pool made dynamic too, where the action is taken, so that the
// guard, not the fixture, is what holds the node.
func TestStaticNodesAreNeverDisrupted(t *testing.T) {
	for _, tt := range []struct {
		name    string
		build   func(f *fixture)
		node    string
		dynamic string // the reason a dynamic pool's node is disrupted for
	}{
		{name: "an empty node", node: "a", dynamic: ReasonEmpty, build: func(f *fixture) {
			f.node("a", "small")
			f.node("b", "large", 500)
		}},
		{name: "an underutilized node", node: "a", dynamic: ReasonUnderutilized, build: func(f *fixture) {
			f.node("a", "large", 500)
			f.node("b", "large", 500)
		}},
		{name: "a node drifted from its node class", node: "a", dynamic: ReasonDrifted, build: func(f *fixture) {
			f.node("a", "small", 1500)
			f.node("b", "large", 500)
			f.claims[0].Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionTrue,
				Reason: "NodeClassDrifted", Message: "its SimNodeClass changed"}}
		}},
		{name: "a node drifted from its NodePool", node: "a", dynamic: ReasonDrifted, build: func(f *fixture) {
			f.node("a", "small", 1500)
			f.node("b", "large", 500)
			f.np.Spec.Template.Labels = map[string]string{"rev": "2"}
		}},
		{name: "an expired node", node: "a", dynamic: ReasonExpired, build: func(f *fixture) {
			f.node("a", "small", 1500)
			f.node("b", "large", 500)
			f.claims[0].Spec.ExpireAfter = "30m"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, static := range []bool{false, true} {
				f := newFixture(v1alpha1.Budget{Nodes: "100%"})
				if static {
					f.np.Spec.Replicas = ptr.To(int64(2))
				}
				tt.build(f)
				d, err := Decide(Input{Snapshot: &Snapshot{Problem: f.p, Pools: map[string]*v1alpha1.NodePool{"pool": f.np}},
					Nodes: f.nodes, Claims: f.claims, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				var touched []string
				for _, c := range d.Chosen {
					touched = append(touched, c.Reason+":"+strings.Join(c.Action.Nodes, ","))
				}
				if !static {
					if d.Action == nil || d.Reason != tt.dynamic || !strings.Contains(strings.Join(d.Action.Nodes, ","), tt.node) {
						t.Fatalf("dynamic pool: chosen %v; want node %s disrupted for %s (the fixture must make the guard matter)", touched, tt.node, tt.dynamic)
					}
					continue
				}
				if len(d.Chosen) > 0 || len(d.Plan.Actions) > 0 {
					t.Errorf("static pool: chosen %v, planned %d action(s); want no static node disrupted", touched, len(d.Plan.Actions))
				}
				if why := d.Refused[tt.node].Reason; !strings.Contains(why, "static (spec.replicas)") {
					t.Errorf("static pool: node %s refused with %q; want the static guard's reason", tt.node, why)
				}
			}
		})
	}
}
