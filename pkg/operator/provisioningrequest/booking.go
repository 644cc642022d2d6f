package provisioningrequest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
)

// DefaultBookingTTL is how long the capacity found or launched for a
// request is held for its pods, as Cluster Autoscaler's booking: after it,
// a request whose pods have not all come is BookingExpired.
const DefaultBookingTTL = 10 * time.Minute

// ReasonBookingExpired is the reason of BookingExpired=True.
const ReasonBookingExpired = "BookingExpired"

// holds reports whether a request holds capacity that other requests must
// not count as free: Provisioned, or launching its gang's nodes, and not
// yet expired, revoked or failed.
func holds(pr *prv1.ProvisioningRequest) bool {
	for _, t := range []string{prv1.ConditionFailed, prv1.ConditionBookingExpired, prv1.ConditionCapacityRevoked} {
		if meta.IsStatusConditionTrue(pr.Status.Conditions, t) {
			return false
		}
	}
	return meta.IsStatusConditionTrue(pr.Status.Conditions, prv1.ConditionProvisioned) || launching(pr) != nil
}

// bookingExpired reports whether a Provisioned request's booking is over:
// Provisioned for longer than ttl at now.
func bookingExpired(pr *prv1.ProvisioningRequest, ttl time.Duration, now time.Time) bool {
	c := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionProvisioned)
	return c != nil && c.Status == "True" && holds(pr) && now.Sub(c.LastTransitionTime.Time) > ttl
}

// bookedPods returns the pods the holding requests keep room for: each
// one's gang less the pods already created for it (consumed counts, by
// namespace/name of the request, the pods annotated to consume it — they
// are in the cluster, pending or running, and planned as such). templates
// are by namespace, then name; a request whose template is gone holds
// nothing.
func bookedPods(holding []*prv1.ProvisioningRequest, templates map[string]map[string]*corev1.PodTemplate, consumed map[string]int) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pr := range holding {
		pods, why := gangPods(pr, templates[pr.Namespace])
		if why != "" {
			continue
		}
		left := max(len(pods)-consumed[pr.Namespace+"/"+pr.Name], 0)
		out = append(out, pods[:left]...)
	}
	return out
}

// consumedPods counts the pods annotated to consume each request, by the
// request's namespace/name.
func consumedPods(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for i := range pods {
		if name := pods[i].Annotations[prv1.PodAnnotationConsume]; name != "" {
			out[pods[i].Namespace+"/"+name]++
		}
	}
	return out
}

// expiredMessage is BookingExpired's message.
func expiredMessage(ttl time.Duration) string {
	return fmt.Sprintf("the capacity was held for %s and the request's pods did not all come; it is no longer held", ttl)
}
