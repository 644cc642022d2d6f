package provisioningrequest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func template(name, gpu string) *corev1.PodTemplate {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse(gpu)}
	return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}, Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: map[string]string{"team": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}},
	}}
}

func request(class string, sets ...prv1.PodSet) *prv1.ProvisioningRequest {
	return &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "job"},
		Spec: prv1.ProvisioningRequestSpec{ProvisioningClassName: class, PodSets: sets}}
}

func set(template string, count int32) prv1.PodSet {
	return prv1.PodSet{PodTemplateRef: prv1.Reference{Name: template}, Count: count}
}

func TestGangPodsAreTheTemplatesTimesTheirCounts(t *testing.T) {
	templates := map[string]*corev1.PodTemplate{"driver": template("driver", "0"), "worker": template("worker", "8")}
	tests := []struct {
		name   string
		sets   []prv1.PodSet
		want   []string // names, in order
		reason string   // a substring of the reason when no gang is built
	}{
		{"one set", []prv1.PodSet{set("worker", 3)}, []string{"job-0-0", "job-0-1", "job-0-2"}, ""},
		{"two sets in order", []prv1.PodSet{set("driver", 1), set("worker", 2)}, []string{"job-0-0", "job-1-0", "job-1-1"}, ""},
		{"missing template", []prv1.PodSet{set("driver", 1), set("ps", 2)}, nil, "PodTemplate ml/ps of pod set 1 is not found"},
		{"no pods", []prv1.PodSet{set("worker", 0)}, nil, "asks for no pods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, reason := gangPods(request(prv1.ClassBestEffortAtomicScaleUp, tc.sets...), templates)
			if tc.reason != "" {
				if pods != nil || !strings.Contains(reason, tc.reason) {
					t.Fatalf("gangPods = %d pods, %q; want none and a reason with %q", len(pods), reason, tc.reason)
				}
				return
			}
			if reason != "" || len(pods) != len(tc.want) {
				t.Fatalf("gangPods = %d pods, %q; want %v", len(pods), reason, tc.want)
			}
			uids := map[string]bool{}
			for i, p := range pods {
				if p.Name != tc.want[i] || p.Namespace != "ml" || p.Status.Phase != corev1.PodPending {
					t.Errorf("pod %d = %s/%s %s; want ml/%s Pending", i, p.Namespace, p.Name, p.Status.Phase, tc.want[i])
				}
				if p.Annotations[prv1.PodAnnotationConsume] != "job" || p.Annotations[prv1.PodAnnotationClass] != prv1.ClassBestEffortAtomicScaleUp || p.Annotations["team"] != "a" {
					t.Errorf("pod %s annotations %v; want the template's and Kueue's consume annotations", p.Name, p.Annotations)
				}
				if len(p.Spec.Containers) != 1 || p.Labels["app"] == "" {
					t.Errorf("pod %s lacks its template's spec or labels", p.Name)
				}
				uids[string(p.UID)] = true
			}
			if len(uids) != len(pods) {
				t.Errorf("%d distinct UIDs for %d pods", len(uids), len(pods))
			}
		})
	}
	// The pods are copies: changing one leaves the template alone.
	pods, _ := gangPods(request(prv1.ClassCheckCapacity, set("worker", 1)), templates)
	pods[0].Spec.Containers[0].Name = "changed"
	pods[0].Annotations["team"] = "b"
	if templates["worker"].Template.Spec.Containers[0].Name != "c" || templates["worker"].Template.Annotations["team"] != "a" {
		t.Error("gangPods shares the template's spec or annotations with its pods")
	}
}

func TestGangProblemPlansOnlyTheGang(t *testing.T) {
	p := &solver.Problem{Pods: []solver.Pod{{Name: "other"}, {Name: "g0"}, {Name: "buffer"}, {Name: "g1"}}, Nodes: []solver.Node{{Name: "n"}}}
	q := gangProblem(p, []int{1, 3})
	if len(q.Pods) != 2 || q.Pods[0].Name != "g0" || q.Pods[1].Name != "g1" || len(q.Nodes) != 1 {
		t.Fatalf("gangProblem pods %v nodes %d; want g0, g1 on the same nodes", q.Pods, len(q.Nodes))
	}
	if len(p.Pods) != 4 {
		t.Error("gangProblem changed the snapshot's problem")
	}
}

// gpuProblem is a cluster with a free GPU node of 8 GPUs (free: how many
// are free) and a pool of 8-GPU nodes whose limit allows limitNodes more,
// and a gang of n pods of gpu GPUs each.
func gpuProblem(free int64, limitNodes, n int, gpu int64) *solver.Problem {
	var capacity solver.Resources
	capacity[solver.CPU], capacity[solver.Memory], capacity[solver.Pods], capacity[solver.GPU] = 96000, 768<<30, 110, 8
	typ := solver.InstanceType{Name: "g6.48xlarge", Labels: map[string]string{corev1.LabelInstanceTypeStable: "g6.48xlarge", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		Capacity: capacity, Offerings: []solver.Offering{{Zone: "z1", CapacityType: "on-demand", Price: 13.35}}}
	pool := solver.Pool{Name: "gpu"}
	pool.HasLimit[solver.GPU], pool.Limits[solver.GPU] = true, int64(limitNodes)*8
	node := solver.Node{Name: "existing", InstanceType: typ.Name, Zone: "z1", Labels: map[string]string{corev1.LabelHostname: "existing", corev1.LabelTopologyZone: "z1"}, Allocatable: capacity}
	node.Requested[solver.GPU] = 8 - free
	p := &solver.Problem{InstanceTypes: []solver.InstanceType{typ}, Pools: []solver.Pool{pool}, Nodes: []solver.Node{node}}
	for i := range n {
		pod := solver.Pod{Namespace: "ml", Name: "job-0-" + string(rune('0'+i))}
		pod.Requests[solver.CPU], pod.Requests[solver.Pods], pod.Requests[solver.GPU] = 1000, 1, gpu
		p.Pods = append(p.Pods, pod)
	}
	return p
}

// withBooked puts k pods of 8 GPUs, held by another request, before the
// problem's pods.
func withBooked(p *solver.Problem, k int) *solver.Problem {
	var booked []solver.Pod
	for i := range k {
		pod := solver.Pod{Namespace: "ml", Name: "held-0-" + string(rune('0'+i))}
		pod.Requests[solver.CPU], pod.Requests[solver.Pods], pod.Requests[solver.GPU] = 1000, 1, 8
		booked = append(booked, pod)
	}
	p.Pods = append(booked, p.Pods...)
	return p
}

// withP4d adds a dearer 8-GPU type, p4d.24xlarge, to a gpuProblem's
// catalog: the blind plan never takes it over g6.48xlarge.
func withP4d(p *solver.Problem) *solver.Problem {
	p4d := p.InstanceTypes[0]
	p4d.Name = "p4d.24xlarge"
	p4d.Labels = maps.Clone(p4d.Labels)
	p4d.Labels[corev1.LabelInstanceTypeStable] = p4d.Name
	p4d.Offerings = []solver.Offering{{Zone: "z1", CapacityType: "on-demand", Price: 32.77}}
	p.InstanceTypes = append(slices.Clone(p.InstanceTypes), p4d)
	return p
}

// withRunningP4d adds a full on-demand p4d.24xlarge node in z1 to a
// withP4d problem.
func withRunningP4d(p *solver.Problem) *solver.Problem {
	n := p.Nodes[0]
	n.Name, n.InstanceType, n.CapacityType, n.Price = "running-p4d", "p4d.24xlarge", "on-demand", 32.77
	n.Labels = map[string]string{corev1.LabelHostname: n.Name, corev1.LabelTopologyZone: "z1"}
	n.Requested[solver.GPU] = 8
	p.Nodes = append(slices.Clone(p.Nodes), n)
	return p
}

// p4dReserved is a zonal reservation of one p4d.24xlarge in z1.
var p4dReserved = []plan.Commitment{{Name: "p4d-ri", Type: v1alpha1.CommitmentReservedInstances,
	InstanceType: "p4d.24xlarge", Family: "p4d", Zone: "z1", Count: 1, Fee: 20}}

func TestDecide(t *testing.T) {
	const (
		check  = prv1.ClassCheckCapacity
		atomic = prv1.ClassBestEffortAtomicScaleUp
	)
	tests := []struct {
		name        string
		class       string
		noRetry     bool
		problem     *solver.Problem
		booked      int // the problem's first pods, held by other requests
		launch      int // nodes
		condType    string
		condStatus  metav1.ConditionStatus
		reason      string
		messageHas  []string
		messageLack string
		// cs are the Commitments the gang's plan spends.
		cs []plan.Commitment
		// launchTypes are the types of the nodes launched, sorted, and
		// coveredTypes those the commitments cover (checked when set).
		launchTypes, coveredTypes []string
	}{
		{"check: the gang fits the free room", check, false, gpuProblem(8, 0, 2, 4), 0, 0,
			prv1.ConditionProvisioned, metav1.ConditionTrue, ReasonCapacityIsFound, []string{"all 2 pods fit"}, "", nil, nil, nil},
		{"check: it needs new nodes, retried", check, false, gpuProblem(8, 4, 3, 4), 0, 0,
			prv1.ConditionProvisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, []string{"1 of 3 pods do not fit", "1 new node (1 × g6.48xlarge in NodePool gpu)"}, "", nil, nil, nil},
		{"check: it needs new nodes, noRetry fails", check, true, gpuProblem(0, 4, 2, 8), 0, 0,
			prv1.ConditionFailed, metav1.ConditionTrue, ReasonCapacityIsNotFound, []string{"2 of 2 pods do not fit", "2 new nodes (2 × g6.48xlarge in NodePool gpu)"}, "", nil, nil, nil},
		{"check: a pool limit leaves a pod out", check, false, gpuProblem(0, 1, 2, 8), 0, 0,
			prv1.ConditionProvisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, []string{"1 of 2 pods cannot be placed", "NodePool gpu", "limit"}, "no node is launched", nil, nil, nil},
		{"check: no type fits", check, false, gpuProblem(0, 4, 1, 16), 0, 0,
			prv1.ConditionProvisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, []string{"1 of 1 pods cannot be placed"}, "", nil, nil, nil},
		{"atomic: a pool limit allows 7 of 8 nodes", atomic, false, gpuProblem(0, 7, 8, 8), 0, 0,
			prv1.ConditionFailed, metav1.ConditionTrue, ReasonCapacityIsNotFound, []string{"1 of 8 pods cannot be placed, so no node is launched", "NodePool gpu", "limit"}, "", nil, nil, nil},
		{"atomic: all 8 nodes within the limit launch", atomic, false, gpuProblem(0, 8, 8, 8), 0, 8, "", "", "", nil, "", nil, nil, nil},
		{"check: room another request holds is not free", check, false, withBooked(gpuProblem(8, 4, 1, 8), 1), 1, 0,
			prv1.ConditionProvisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, []string{"1 of 1 pods do not fit", "1 new node"}, "", nil, nil, nil},
		{"atomic: launches only the gang's nodes, not a booked pod's", atomic, false, withBooked(gpuProblem(0, 4, 1, 8), 1), 1, 1, "", "", "", nil, "", nil, nil, nil},
		{"atomic: the held room is not the gang's, and the limit leaves none", atomic, false, withBooked(gpuProblem(8, 0, 1, 8), 1), 1, 0,
			prv1.ConditionFailed, metav1.ConditionTrue, ReasonCapacityIsNotFound, []string{"1 of 1 pods cannot be placed", "limit"}, "", nil, nil, nil},
		{"check: two pods held, room for one: none left for the gang", check, false, withBooked(gpuProblem(8, 0, 1, 8), 2), 2, 0,
			prv1.ConditionProvisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound, []string{"cannot be placed"}, "", nil, nil, nil},
		{"atomic: room on the nodes there are", atomic, false, gpuProblem(8, 0, 1, 8), 0, 0,
			prv1.ConditionProvisioned, metav1.ConditionTrue, ReasonCapacityIsFound, []string{"all 1 pods fit"}, "", nil, nil, nil},
		{"atomic: without commitments the gang launches on the cheaper type", atomic, false, withP4d(gpuProblem(0, 4, 2, 8)), 0, 2, "", "", "", nil, "",
			nil, []string{"g6.48xlarge", "g6.48xlarge"}, nil},
		{"atomic: a reservation covers one node of the gang, which launches on the reserved type", atomic, false, withP4d(gpuProblem(0, 4, 2, 8)), 0, 2, "", "", "", nil, "",
			p4dReserved, []string{"g6.48xlarge", "p4d.24xlarge"}, []string{"p4d.24xlarge"}},
		{"atomic: a reservation of one node covers one of three, the others on the cheaper type", atomic, false, withP4d(gpuProblem(0, 4, 3, 8)), 0, 3, "", "", "", nil, "",
			p4dReserved, []string{"g6.48xlarge", "g6.48xlarge", "p4d.24xlarge"}, []string{"p4d.24xlarge"}},
		{"atomic: a running p4d uses the reservation first, so the gang is not covered", atomic, false, withRunningP4d(withP4d(gpuProblem(0, 4, 2, 8))), 0, 2, "", "", "", nil, "",
			p4dReserved, []string{"g6.48xlarge", "g6.48xlarge"}, nil},
		{"check: the nodes it would need are priced with the reservation", check, false, withP4d(gpuProblem(0, 4, 2, 8)), 0, 0,
			prv1.ConditionProvisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound,
			[]string{"2 of 2 pods do not fit", "1 × g6.48xlarge in NodePool gpu, 1 × p4d.24xlarge in NodePool gpu", "$46.1200/h at list price, $32.7700/h of it covered by commitments"}, "",
			p4dReserved, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.problem
			if tc.booked > 0 { // their room reserved first, as the controller does
				b := &solver.Problem{}
				*b = *q
				b.Pods = q.Pods[:tc.booked]
				q = gangProblem(q, nil)
				q.Pods = tc.problem.Pods[tc.booked:]
				held, err := solver.Solve(b)
				if err != nil {
					t.Fatal(err)
				}
				q = reserve(q, b, held)
			}
			// The controller's own path: the blind plan, then the
			// commitments spent on it.
			c := &Controller{opts: Options{SolveTimeout: 5 * time.Second}, log: logr.Discard()}
			planned, err := c.solveGang(context.Background(), q, tc.cs)
			if err != nil {
				t.Fatal(err)
			}
			d := decide(tc.class, tc.noRetry, q, planned)
			if len(d.launch) != tc.launch {
				t.Fatalf("launch %d nodes; want %d (plan: %d new nodes, %d unplaced %v)", len(d.launch), tc.launch, len(planned.NewNodes), len(planned.Unschedulable), planned.Unschedulable)
			}
			if tc.launch > 0 {
				var types, covered []string
				for i, n := range d.launch {
					types = append(types, n.InstanceType)
					if i < len(d.covered) && d.covered[i] > 0 {
						covered = append(covered, n.InstanceType)
					}
				}
				slices.Sort(types)
				if tc.launchTypes != nil && !slices.Equal(types, tc.launchTypes) {
					t.Errorf("launches %v; want %v", types, tc.launchTypes)
				}
				if !slices.Equal(covered, tc.coveredTypes) {
					t.Errorf("covered %v (shares %v); want %v", covered, d.covered, tc.coveredTypes)
				}
				return
			}
			cd := d.cond
			if cd.Type != tc.condType || cd.Status != tc.condStatus || cd.Reason != tc.reason {
				t.Errorf("condition %s=%s %s; want %s=%s %s (%s)", cd.Type, cd.Status, cd.Reason, tc.condType, tc.condStatus, tc.reason, cd.Message)
			}
			for _, s := range tc.messageHas {
				if !strings.Contains(cd.Message, s) {
					t.Errorf("message %q lacks %q", cd.Message, s)
				}
			}
			if tc.messageLack != "" && strings.Contains(cd.Message, tc.messageLack) {
				t.Errorf("message %q says %q", cd.Message, tc.messageLack)
			}
			if strings.Contains(cd.Message, "\n") {
				t.Errorf("message %q is more than one line", cd.Message)
			}
		})
	}
}

func TestOpenRequests(t *testing.T) {
	withCond := func(class, typ string, status metav1.ConditionStatus) *prv1.ProvisioningRequest {
		pr := request(class, set("w", 1))
		if typ != "" {
			pr.Status.Conditions = []metav1.Condition{{Type: typ, Status: status}}
		}
		return pr
	}
	tests := []struct {
		name string
		pr   *prv1.ProvisioningRequest
		want bool
	}{
		{"new check-capacity", withCond(prv1.ClassCheckCapacity, "", ""), true},
		{"new atomic", withCond(prv1.ClassBestEffortAtomicScaleUp, "", ""), true},
		{"another autoscaler's class", withCond("queued-provisioning.gke.io", "", ""), false},
		{"check-capacity not found yet: retried", withCond(prv1.ClassCheckCapacity, prv1.ConditionProvisioned, metav1.ConditionFalse), true},
		{"provisioned", withCond(prv1.ClassCheckCapacity, prv1.ConditionProvisioned, metav1.ConditionTrue), false},
		{"failed", withCond(prv1.ClassBestEffortAtomicScaleUp, prv1.ConditionFailed, metav1.ConditionTrue), false},
		{"booking expired", withCond(prv1.ClassCheckCapacity, prv1.ConditionBookingExpired, metav1.ConditionTrue), false},
		{"capacity revoked", withCond(prv1.ClassCheckCapacity, prv1.ConditionCapacityRevoked, metav1.ConditionTrue), false},
	}
	for _, tc := range tests {
		if got := open(tc.pr); got != tc.want {
			t.Errorf("%s: open = %v; want %v", tc.name, got, tc.want)
		}
	}
}
