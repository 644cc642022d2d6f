package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// testKarpenterMetrics checks, after the disruption scenarios, that the
// metrics served under Karpenter's names count what ours count and what
// the API server holds: NodeClaims created less those terminated are the
// NodeClaims there are, one karpenter_pods_state series per pod, and each
// karpenter_ counter equal to the rightsize_ one it mirrors.
func (d *disruptionEnv) testKarpenterMetrics(t *testing.T) {
	ctx := context.Background()
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		m := metricSums(scrape(t, d.metrics))
		var claims v1alpha1.NodeClaimList
		var pods corev1.PodList
		if err := d.c.List(ctx, &claims); err != nil {
			return false, err
		}
		if err := d.c.List(ctx, &pods); err != nil {
			return false, err
		}
		var wrong []string
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"karpenter_nodeclaims_created_total = rightsize_nodeclaims_created_total", m["karpenter_nodeclaims_created_total"], m["rightsize_nodeclaims_created_total"]},
			{"karpenter_nodeclaims_terminated_total = rightsize_nodeclaims_deleted_total", m["karpenter_nodeclaims_terminated_total"], m["rightsize_nodeclaims_deleted_total"]},
			{"karpenter_nodes_created_total = rightsize_nodeclaims_registered_total", m["karpenter_nodes_created_total"], m["rightsize_nodeclaims_registered_total"]},
			{"karpenter_voluntary_disruption_decisions_total = rightsize_disruption_actions_total", m["karpenter_voluntary_disruption_decisions_total"], m["rightsize_disruption_actions_total"]},
			{"karpenter_pods_disruption_initiated_total = rightsize_disruption_pods_evicted_total", m["karpenter_pods_disruption_initiated_total"], m["rightsize_disruption_pods_evicted_total"]},
			{"created less terminated = the NodeClaims there are", m["karpenter_nodeclaims_created_total"] - m["karpenter_nodeclaims_terminated_total"], float64(len(claims.Items))},
			{"karpenter_pods_state = the pods there are", m["karpenter_pods_state"], float64(len(pods.Items))},
		} {
			if c.got != c.want {
				wrong = append(wrong, fmt.Sprintf("%s: %v, want %v", c.what, c.got, c.want))
			}
		}
		if m["karpenter_nodeclaims_created_total"] == 0 || m[`karpenter_voluntary_disruption_decisions_total{consolidation_type="",decision="replace",reason="expired"}`] == 0 {
			wrong = append(wrong, "no NodeClaim created or no expiry counted: the scenarios before did not run?")
		}
		last = strings.Join(wrong, "; ")
		return last == "", nil
	})
	if err != nil {
		t.Fatalf("Karpenter's metrics disagree with ours or with the objects for 30 s: %s", last)
	}
	out := scrape(t, d.metrics)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "karpenter_nodeclaims_") || strings.HasPrefix(l, "karpenter_voluntary_disruption_decisions_total") {
			lines = append(lines, l)
		}
	}
	t.Logf("Karpenter-named counters:\n%s", strings.Join(lines, "\n"))
}
