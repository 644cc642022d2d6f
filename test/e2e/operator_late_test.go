package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestOperatorLatePods: a plan with a late pod (solver.Plan.Late) on the
// live operator. Two "leaders" (1 CPU) spread over two zones by their
// group's label; two "followers" (250m) of the same group, pinned to
// zone a, must share a node with a leader. The plan puts the first leader
// and the followers on a zone-a node and the second leader on a zone-b
// node; the second follower is late: bound before the second leader, it
// would put zone a two pods of the group ahead. kube-scheduler filters a
// pod with the pods of equal or higher priority nominated to the node
// added, so that follower, nominated with the others, counted against the
// leaders it must follow. The operator now nominates it only once every
// pod it depends on is bound. The test checks that order on the pods'
// own status (the watch sees each nomination and each binding), that
// every pod runs in the zone the plan gave it, and that the operator
// launched the plan's nodes and no more. Scenario from a scan of random
// two- and three-workload plans for late pods (the shape of the
// kube-scheduler judge's seeds 45 and 85: a follower's pod affinity and a
// spread over a label it carries).
func TestOperatorLatePods(t *testing.T) {
	ctx := context.Background()
	e := startOpEnv(t)
	const pool = "late"
	np := e.nodePool(t, pool, 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "m6i"),
		req(solver.LabelZone, "us-east-1a", "us-east-1b"))
	ns := e.namespace(t, "late")
	t.Cleanup(func() { e.forceCleanup(t, ns, pool) })

	group := map[string]string{"group": "g1"}
	var pods []*corev1.Pod
	for i := range 2 {
		p := opPod(ns, fmt.Sprintf("leader-%d", i), "1", "512Mi", nil)
		p.Labels = map[string]string{"app": "leader", "group": "g1"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: solver.LabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: group}}}
		pods = append(pods, p)
	}
	for i := range 2 {
		p := opPod(ns, fmt.Sprintf("follower-%d", i), "250m", "512Mi", map[string]string{solver.LabelZone: "us-east-1a"})
		p.Labels = map[string]string{"app": "follower", "group": "g1"}
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "leader"}}}}}}
		pods = append(pods, p)
	}
	// The operator plans its pods oldest first, then by name: created one
	// after the other in name order, they are planned in that order.
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	plan := offlinePlan(t, pods, []*v1alpha1.NodePool{np})
	if len(plan.Late) == 0 {
		t.Fatalf("the offline plan has no late pod; the scenario needs one: %+v", plan.NewNodes)
	}
	// Pods of one app are alike: the plan is met up to their names.
	planned := map[string]int{} // app/zone -> pods
	for _, n := range plan.NewNodes {
		for _, i := range n.Pods {
			planned[pods[i].Labels["app"]+"/"+n.Zone]++
		}
	}
	var late []string
	for _, i := range plan.Late {
		late = append(late, pods[i].Name)
	}
	t.Logf("offline plan: %d nodes, $%.4f/h, late %v, pods per app and zone %v", len(plan.NewNodes), plan.TotalPrice, late, planned)

	// Every nomination and binding, as the pods' status shows them.
	w, err := e.Client().CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	nominatedAt, boundAt := map[string]time.Time{}, map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			mu.Lock()
			if _, seen := nominatedAt[p.Name]; !seen && p.Status.NominatedNodeName != "" {
				nominatedAt[p.Name] = time.Now()
			}
			if _, seen := boundAt[p.Name]; !seen && p.Spec.NodeName != "" {
				boundAt[p.Name] = time.Now()
			}
			mu.Unlock()
		}
	}()

	addr := freePort(t)
	op := e.startOperator(t, "operator", nil, "--leader-elect=false", "--disruption=false", "--metrics-bind-address", addr)
	for _, p := range pods {
		if _, err := e.Client().CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitRunning(t, ns, len(pods), 2*time.Minute)

	// The live plan's late pods, as the operator logged them.
	var liveLate []string
	for _, r := range op.records("late pods, nominated once the pods they follow are bound") {
		if l, ok := r["pods"].([]any); ok {
			for _, k := range l {
				liveLate = append(liveLate, strings.TrimPrefix(fmt.Sprint(k), ns+"/"))
			}
		}
	}
	for _, r := range op.records("batch planned") {
		t.Logf("operator: batch of %v pods, %v NodeClaims, $%v/h, %v late", r["pods"], r["nodeClaims"], r["pricePerHour"], r["late"])
	}
	if !slices.Equal(liveLate, late) {
		t.Errorf("the operator's plan has late pods %v, the offline plan %v", liveLate, late)
	}
	mu.Lock()
	defer mu.Unlock()
	var lastDep time.Time
	for _, p := range pods {
		if !slices.Contains(late, p.Name) && boundAt[p.Name].After(lastDep) {
			lastDep = boundAt[p.Name]
		}
	}
	for _, name := range late {
		nom, ok := nominatedAt[name]
		switch {
		case ok && nom.Before(lastDep):
			t.Errorf("late pod %s was nominated %v before the last pod it follows was bound", name, lastDep.Sub(nom).Round(time.Millisecond))
		case ok:
			t.Logf("late pod %s nominated %v after the last pod it follows was bound, bound %v after that", name,
				nom.Sub(lastDep).Round(time.Millisecond), boundAt[name].Sub(lastDep).Round(time.Millisecond))
		default:
			// Its own constraints admitted it before the others were all
			// bound: the operator orders nominations, not bindings.
			t.Logf("late pod %s bound without a nomination, %v after the last pod it follows (negative: before)", name, boundAt[name].Sub(lastDep).Round(time.Millisecond))
		}
	}
	list, err := e.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]int{}
	for _, p := range list.Items {
		var n corev1.Node
		if err := e.c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &n); err != nil {
			t.Fatal(err)
		}
		running[p.Labels["app"]+"/"+n.Labels[solver.LabelZone]]++
	}
	if !maps.Equal(running, planned) {
		t.Errorf("pods per app and zone %v, planned %v", running, planned)
	}
	claims := e.claims(t, pool)
	if len(claims) != len(plan.NewNodes) {
		t.Errorf("%d NodeClaims (%v) for a plan of %d nodes", len(claims), names(claims), len(plan.NewNodes))
	}
	// Karpenter's cloud provider metrics count the launches.
	want := fmt.Sprintf(`karpenter_cloudprovider_duration_seconds_count{controller="nodeclaim.lifecycle",method="Create",provider="sim"} %d`, len(claims))
	if out := scrape(t, addr); !strings.Contains(out, want) {
		t.Errorf("no %s in /metrics", want)
	}
}
