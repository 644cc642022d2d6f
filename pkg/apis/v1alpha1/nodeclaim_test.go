package v1alpha1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// The solver is pure and may not import this package, so it spells the
// label keys it shares with the API itself; they must agree.
func TestSolverLabelKeysAreTheAPIs(t *testing.T) {
	for _, tc := range []struct{ solver, api string }{
		{solver.LabelNodePool, v1alpha1.KarpenterLabelNodePool},
		{solver.LabelCapacityType, v1alpha1.LabelCapacityType},
		{solver.LabelInstanceType, corev1.LabelInstanceTypeStable},
		{solver.LabelZone, corev1.LabelTopologyZone},
	} {
		if tc.solver != tc.api {
			t.Errorf("solver spells %q, the API %q", tc.solver, tc.api)
		}
	}
}

func TestDeletionReasonDecidesHowTheNodeDrains(t *testing.T) {
	for _, tc := range []struct {
		annotation string
		want       v1alpha1.DeletionReason
		graceful   bool
	}{
		{"", v1alpha1.DeletionReasonDeleted, true},
		{"repair", v1alpha1.DeletionReasonRepair, false},
		{"disruption", v1alpha1.DeletionReasonDisruption, true},
		{"interruption", v1alpha1.DeletionReasonInterruption, true},
		{"registration_timeout", v1alpha1.DeletionReasonRegistrationTimeout, true},
		{"something-new", "something-new", true},
	} {
		claim := &v1alpha1.NodeClaim{}
		if tc.annotation != "" {
			claim.Annotations = map[string]string{v1alpha1.AnnotationDeletionReason: tc.annotation}
		}
		got := claim.DeletionReason()
		if got != tc.want || got.Graceful() != tc.graceful {
			t.Errorf("annotation %q: reason %q graceful %v, want %q graceful %v", tc.annotation, got, got.Graceful(), tc.want, tc.graceful)
		}
	}
	var claim v1alpha1.NodeClaim
	claim.SetDeletionReason(v1alpha1.DeletionReasonRepair)
	if claim.Annotations[v1alpha1.AnnotationDeletionReason] != "repair" || claim.DeletionReason().Graceful() {
		t.Errorf("SetDeletionReason(repair) left annotations %v", claim.Annotations)
	}
}

func TestConditionTransitionsWalkTheLifecycle(t *testing.T) {
	claim := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	status := func(cond string) metav1.ConditionStatus {
		for _, c := range claim.Status.Conditions {
			if c.Type == cond {
				if c.ObservedGeneration != 3 {
					t.Errorf("%s observed generation %d, want 3", cond, c.ObservedGeneration)
				}
				return c.Status
			}
		}
		return ""
	}
	steps := []struct {
		name string
		do   func()
		want map[string]metav1.ConditionStatus
		is   [3]bool // launched, registered, initialized
	}{
		{"launch failed", func() {
			if !claim.SetLaunchFailed(v1alpha1.ReasonLaunchFailed, "no capacity") {
				t.Error("SetLaunchFailed reported no change")
			}
			if claim.SetLaunchFailed(v1alpha1.ReasonLaunchFailed, "no capacity") {
				t.Error("SetLaunchFailed again reported a change")
			}
		}, map[string]metav1.ConditionStatus{v1alpha1.ConditionLaunched: metav1.ConditionFalse}, [3]bool{}},
		{"launched", func() { claim.SetLaunched(v1alpha1.ReasonLaunched, "") },
			map[string]metav1.ConditionStatus{v1alpha1.ConditionLaunched: metav1.ConditionTrue, v1alpha1.ConditionRegistered: metav1.ConditionUnknown, v1alpha1.ConditionReady: metav1.ConditionFalse},
			[3]bool{true, false, false}},
		{"registered", func() { claim.SetRegistered("node-a") },
			map[string]metav1.ConditionStatus{v1alpha1.ConditionRegistered: metav1.ConditionTrue, v1alpha1.ConditionInitialized: metav1.ConditionUnknown, v1alpha1.ConditionReady: metav1.ConditionFalse},
			[3]bool{true, true, false}},
		{"initialized", func() { claim.SetInitialized() },
			map[string]metav1.ConditionStatus{v1alpha1.ConditionInitialized: metav1.ConditionTrue, v1alpha1.ConditionReady: metav1.ConditionTrue},
			[3]bool{true, true, true}},
	}
	for _, s := range steps {
		s.do()
		for cond, want := range s.want {
			if got := status(cond); got != want {
				t.Errorf("after %s: %s is %q, want %q", s.name, cond, got, want)
			}
		}
		if got := [3]bool{claim.IsLaunched(), claim.IsRegistered(), claim.IsInitialized()}; got != s.is {
			t.Errorf("after %s: launched, registered, initialized = %v, want %v", s.name, got, s.is)
		}
	}
	if claim.Status.NodeName != "node-a" {
		t.Errorf("node name %q, want node-a", claim.Status.NodeName)
	}
	if claim.TransitionTime(v1alpha1.ConditionLaunched).IsZero() || !claim.TransitionTime(v1alpha1.ConditionDrifted).IsZero() {
		t.Error("TransitionTime: want a time for Launched and none for a condition the claim lacks")
	}
}

func TestNewNodeClaimIsThePoolsClaimPinnedToTheLaunch(t *testing.T) {
	grace := metav1.Duration{Duration: 3600e9}
	pool := func(uid string, class string) *v1alpha1.NodePool {
		np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: k8stypes.UID(uid)}}
		t := &np.Spec.Template
		t.Labels = map[string]string{"team": "web"}
		t.Annotations = map[string]string{"note": "template", v1alpha1.AnnotationReason: "overridden"}
		t.Spec.NodeClassRef = v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: class}
		t.Spec.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"amd64"}}}
		t.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
		t.Spec.StartupTaints = []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoSchedule}}
		t.Spec.ExpireAfter = "24h"
		t.Spec.TerminationGracePeriod = &grace
		return np
	}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
	for _, tc := range []struct {
		name      string
		pool      *v1alpha1.NodePool
		opts      v1alpha1.NodeClaimOptions
		wantReqs  int
		wantOwner bool
		wantClass bool
	}{
		{"planned node", pool("1", "default"), v1alpha1.NodeClaimOptions{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot", Requests: requests,
			Annotations: map[string]string{v1alpha1.AnnotationReason: "cheapest", v1alpha1.AnnotationPlannedPods: "3"}}, 4, true, true},
		{"adopted, zone unknown", pool("1", "default"), v1alpha1.NodeClaimOptions{InstanceType: "m5.large", CapacityType: "spot",
			Labels: map[string]string{"team": "other", "extra": "x", corev1.LabelHostname: "h"}}, 3, true, true},
		{"pool not in the cluster", pool("", ""), v1alpha1.NodeClaimOptions{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"}, 4, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.pool.NewNodeClaim(tc.opts)
			if c.Kind != "NodeClaim" || c.APIVersion != v1alpha1.SchemeGroupVersion.String() || c.Name != "" {
				t.Errorf("type %s/%s name %q", c.APIVersion, c.Kind, c.Name)
			}
			if c.Labels[v1alpha1.LabelNodePool] != "web" || c.Labels[v1alpha1.KarpenterLabelNodePool] != "web" || c.Labels["team"] != "web" {
				t.Errorf("labels %v: want the pool's node labels, the template's winning", c.Labels)
			}
			if _, ok := c.Labels[v1alpha1.LabelNodeClass]; ok != tc.wantClass {
				t.Errorf("labels %v: node class label present %v, want %v", c.Labels, ok, tc.wantClass)
			}
			if tc.opts.Labels != nil && (c.Labels["extra"] != "x" || c.Labels[corev1.LabelHostname] != "") {
				t.Errorf("labels %v: want the launch's extra label, never its hostname", c.Labels)
			}
			if c.Annotations["note"] != "template" {
				t.Errorf("annotations %v: want the template's", c.Annotations)
			}
			if want := tc.opts.Annotations[v1alpha1.AnnotationReason]; want != "" && c.Annotations[v1alpha1.AnnotationReason] != want {
				t.Errorf("reason %q, want the launch's %q over the template's", c.Annotations[v1alpha1.AnnotationReason], want)
			}
			if len(c.Spec.Requirements) != tc.wantReqs || c.Spec.Requirements[0].Key != "kubernetes.io/arch" {
				t.Errorf("requirements %v: want the template's then %d pins", c.Spec.Requirements, tc.wantReqs-1)
			}
			for _, r := range c.Spec.Requirements[1:] {
				if len(r.Values) != 1 || r.Values[0] == "" || r.Operator != v1alpha1.NodeSelectorOpIn {
					t.Errorf("pin %v: want In one value", r)
				}
			}
			if len(tc.pool.Spec.Template.Spec.Requirements) != 1 {
				t.Error("NewNodeClaim changed the template's requirements")
			}
			if c.Spec.NodeClassRef != tc.pool.Spec.Template.Spec.NodeClassRef || len(c.Spec.Taints) != 1 || len(c.Spec.StartupTaints) != 1 ||
				c.Spec.ExpireAfter != "24h" || c.Spec.TerminationGracePeriod == nil || c.Spec.TerminationGracePeriod.Duration != grace.Duration {
				t.Errorf("spec %+v: want the template's class, taints, expiry and grace", c.Spec)
			}
			if !c.Spec.Resources.Requests.Cpu().Equal(*tc.opts.Requests.Cpu()) {
				t.Errorf("requests %v, want %v", c.Spec.Resources.Requests, tc.opts.Requests)
			}
			if got := len(c.OwnerReferences) == 1 && c.OwnerReferences[0].UID == tc.pool.UID && c.OwnerReferences[0].Kind == "NodePool"; got != tc.wantOwner {
				t.Errorf("owner references %v, want owned %v", c.OwnerReferences, tc.wantOwner)
			}
		})
	}
}

func TestApplyToNodeAndUsable(t *testing.T) {
	claim := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "u", Labels: map[string]string{v1alpha1.LabelNodePool: "web"}},
		Spec: v1alpha1.NodeClaimSpec{Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoSchedule}}}}
	node := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	claim.ApplyToNode(node, true)
	claim.ApplyToNode(node, true)
	if node.Labels[v1alpha1.LabelNodePool] != "web" || len(node.Spec.Taints) != 2 || len(node.OwnerReferences) != 1 {
		t.Fatalf("node after ApplyToNode twice: labels %v taints %v owners %v", node.Labels, node.Spec.Taints, node.OwnerReferences)
	}
	if claim.Usable(node) {
		t.Error("usable with its startup taint left")
	}
	node.Spec.Taints = node.Spec.Taints[1:]
	if !claim.Usable(node) {
		t.Error("not usable once the startup taint is gone")
	}
}
