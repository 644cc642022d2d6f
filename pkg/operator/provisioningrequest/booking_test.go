package provisioningrequest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
)

func TestBookingHoldsUntilExpiredOrFinal(t *testing.T) {
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	tests := []struct {
		name    string
		conds   []metav1.Condition
		details map[string]prv1.Detail
		holds   bool
		expired bool
	}{
		{"new", nil, nil, false, false},
		{"provisioned a minute ago", []metav1.Condition{{Type: prv1.ConditionProvisioned, Status: "True", LastTransitionTime: at(time.Minute)}}, nil, true, false},
		{"provisioned 11 minutes ago", []metav1.Condition{{Type: prv1.ConditionProvisioned, Status: "True", LastTransitionTime: at(11 * time.Minute)}}, nil, true, true},
		{"launching", []metav1.Condition{{Type: prv1.ConditionProvisioned, Status: "False", Reason: ReasonLaunching, LastTransitionTime: at(time.Hour)}},
			map[string]prv1.Detail{DetailNodeClaims: "a"}, true, false},
		{"not found", []metav1.Condition{{Type: prv1.ConditionProvisioned, Status: "False", Reason: ReasonCapacityIsNotFound}}, nil, false, false},
		{"expired", []metav1.Condition{{Type: prv1.ConditionProvisioned, Status: "True", LastTransitionTime: at(time.Hour)}, {Type: prv1.ConditionBookingExpired, Status: "True"}}, nil, false, false},
		{"revoked", []metav1.Condition{{Type: prv1.ConditionProvisioned, Status: "True", LastTransitionTime: at(time.Minute)}, {Type: prv1.ConditionCapacityRevoked, Status: "True"}}, nil, false, false},
		{"failed", []metav1.Condition{{Type: prv1.ConditionFailed, Status: "True"}}, nil, false, false},
	}
	for _, tc := range tests {
		pr := request(prv1.ClassBestEffortAtomicScaleUp, set("w", 1))
		pr.Status.Conditions, pr.Status.ProvisioningClassDetails = tc.conds, tc.details
		if got := holds(pr); got != tc.holds {
			t.Errorf("%s: holds = %v; want %v", tc.name, got, tc.holds)
		}
		if got := bookingExpired(pr, DefaultBookingTTL, now); got != tc.expired {
			t.Errorf("%s: bookingExpired = %v; want %v", tc.name, got, tc.expired)
		}
	}
}

func TestBookedPodsLessThoseCreated(t *testing.T) {
	templates := map[string]map[string]*corev1.PodTemplate{"ml": {"worker": template("worker", "8")}}
	a := request(prv1.ClassBestEffortAtomicScaleUp, set("worker", 4))
	b := request(prv1.ClassCheckCapacity, set("worker", 2))
	b.Name = "other"
	gone := request(prv1.ClassCheckCapacity, set("missing", 3))
	gone.Name = "gone"
	consume := func(ns, req string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Annotations: map[string]string{prv1.PodAnnotationConsume: req}}}
	}
	consumed := consumedPods([]corev1.Pod{consume("ml", "job"), consume("ml", "job"), consume("ml", "other"), consume("ml", "other"), consume("ml", "other"),
		consume("elsewhere", "job"), {}})
	if consumed["ml/job"] != 2 || consumed["ml/other"] != 3 || consumed["elsewhere/job"] != 1 || len(consumed) != 3 {
		t.Fatalf("consumedPods = %v", consumed)
	}
	pods := bookedPods([]*prv1.ProvisioningRequest{a, b, gone}, templates, consumed)
	// job: 4 less 2 created; other: 2 less 3 created, none; gone: no template.
	if len(pods) != 2 || pods[0].Name != "job-0-0" || pods[1].Name != "job-0-1" {
		names := []string{}
		for _, p := range pods {
			names = append(names, p.Name)
		}
		t.Errorf("bookedPods = %v; want [job-0-0 job-0-1]", names)
	}
}
