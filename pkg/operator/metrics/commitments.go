package metrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/commitments"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// Label names of the commitment gauges.
const (
	LabelCommitment = "commitment"
	LabelType       = "type"
)

var (
	// CommitmentUtilization is the share of each Commitment the launched
	// NodeClaims use, as AWS applies commitments (plan.BillOf).
	CommitmentUtilization = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "commitment_utilization",
		Help: "Share (0-1) of each Commitment's normalised units (a regional Reserved Instance), instances (a zonal one) or dollars an hour (a Savings Plan) " +
			"used by the launched NodeClaims, billed as AWS applies commitments, by commitment and type; Commitments of another region than the operator's have none. Refreshed every few seconds.",
	}, []string{LabelCommitment, LabelType})
	// CommitmentCovered is the list price of the usage each Commitment pays for.
	CommitmentCovered = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "commitment_covered_dollars_per_hour",
		Help: "On-demand price, in US dollars per hour, of the launched NodeClaims' usage each Commitment covers, by commitment and type. Refreshed every few seconds.",
	}, []string{LabelCommitment, LabelType})
	// CommitmentSpilled is the list price of the usage each Commitment could
	// cover but has no room for.
	CommitmentSpilled = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "commitment_spilled_dollars_per_hour",
		Help: "On-demand price, in US dollars per hour, of the launched NodeClaims' usage each Commitment could cover but has no room for (left to a later commitment or paid on-demand), by commitment and type. Refreshed every few seconds.",
	}, []string{LabelCommitment, LabelType})
)

// WithCommitments makes c also set CommitmentUtilization, CommitmentCovered
// and CommitmentSpilled at each refresh: the Commitments r reads billed
// with plan.BillOf over the launched NodeClaims. A cluster without the CRD,
// or an operator not allowed to list Commitments (an older install), shows
// no commitment series; the other gauges do not depend on it. It returns
// c.
func (c *Cluster) WithCommitments(r *commitments.Reader) *Cluster {
	c.commitments = r
	return c
}

// refreshCommitments sets the commitment gauges from the NodeClaims listed.
// An error listing Commitments other than their absence keeps the last
// values; an invalid Commitment is left out of the bill and reported.
func (c *Cluster) refreshCommitments(ctx context.Context, claims []v1alpha1.NodeClaim) error {
	if c.commitments == nil {
		return nil
	}
	cs, invalid, err := c.commitments.Read(ctx)
	if err != nil {
		return err
	}
	c.setCommitments(plan.BillOf(billNodes(claims), cs).Commitments)
	if invalid != nil {
		return fmt.Errorf("billing Commitments: %w", invalid)
	}
	return nil
}

// setCommitments sets the commitment gauges to uses, and deletes the
// series of commitments not among them.
func (c *Cluster) setCommitments(uses []plan.CommitmentUse) {
	var utilization, covered, spilled []series
	for _, u := range uses {
		labels := []string{u.Name, string(u.Type)}
		utilization = append(utilization, series{labels: labels, value: u.Utilization})
		covered = append(covered, series{labels: labels, value: u.Covered})
		spilled = append(spilled, series{labels: labels, value: u.Spilled})
	}
	c.set(CommitmentUtilization, utilization)
	c.set(CommitmentCovered, covered)
	c.set(CommitmentSpilled, spilled)
}

// billNodes are the launched NodeClaims as plan.BillOf sees them: instance
// type, zone, capacity type and price as plan.ClaimOf reads them, and
// vCPUs from status.capacity. Claims being deleted count: their instances
// run, and are billed, until terminated.
func billNodes(claims []v1alpha1.NodeClaim) []plan.BillNode {
	out := make([]plan.BillNode, 0, len(claims))
	for i := range claims {
		nc := &claims[i]
		if !nc.IsLaunched() {
			continue
		}
		cl := plan.ClaimOf(nc)
		n := plan.BillNode{InstanceType: cl.InstanceType, Zone: cl.Zone, CapacityType: cl.CapacityType, Price: cl.Price}
		if cpu, ok := nc.Status.Capacity[corev1.ResourceCPU]; ok {
			n.VCPUs = int(cpu.Value())
		}
		out = append(out, n)
	}
	return out
}
