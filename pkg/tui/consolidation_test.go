package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// TestConsolidationViewJudgesRightsizePoolsAsTheOperatorDoes feeds an empty
// node of a rightsize.dev NodePool that no NodeClaim owns: the planner alone
// would delete it, the operator never touches it, and the view must say
// what the operator would do.
func TestConsolidationViewJudgesRightsizePoolsAsTheOperatorDoes(t *testing.T) {
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rightsize.dev/v1alpha1", "kind": "NodePool",
		"metadata": map[string]any{"name": "default", "uid": "pool-uid"},
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "rightsize.dev", "kind": "SimNodeClass", "name": "sim"},
			}},
			"disruption": map[string]any{"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"},
		},
	}}
	var b watch.Batch
	add := func(k watch.Kind, key string, obj any) {
		b.Events = append(b.Events, watch.Event{Kind: k, Key: key, Obj: obj})
	}
	add(watch.NodePool, "default", pool)
	for _, name := range []string{"node-a", "node-b"} {
		n := node(name, "m5.large", "2", "8Gi")
		n.Labels["rightsize.dev/nodepool"] = "default"
		add(watch.Node, name, n)
	}
	add(watch.Pod, "default/db-0", pod("db-0", "db", "node-a", "500m", "1Gi"))

	m := New(Options{Context: "test-ctx", Catalog: plan.Catalog{Region: "us-east-1"}, Debounce: time.Millisecond,
		Now: func() time.Time { return now }, Launcher: &recordingLauncher{}})
	drive(t, m, tea.WindowSizeMsg{Width: 160, Height: 30}, b, watch.Synced{})
	if m.rep == nil || m.rep.Consolidation == nil {
		t.Fatalf("no consolidation plan; plan error: %v", m.planErr)
	}
	if a := m.rep.Consolidation.Actions; len(a) != 0 {
		t.Errorf("actions %+v: the operator never removes a node no NodeClaim owns", a)
	}
	blocked := map[string]string{}
	for _, nb := range m.rep.Consolidation.Blocked {
		blocked[nb.Node] = nb.Reason
	}
	for _, n := range []string{"node-a", "node-b"} {
		if !strings.Contains(blocked[n], "no rightsize NodeClaim owns it") {
			t.Errorf("%s: blocked because %q, want the operator's reason", n, blocked[n])
		}
	}
	drive(t, m, keys("4")...)
	mustContain(t, screen(m), "node-b", "no rightsize NodeClaim owns it")
}
