package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// testReservedFirst: a NodePool allowing capacity types reserved and
// on-demand, on an EC2NodeClass whose capacityReservationSelectorTerms
// select one on-demand capacity reservation of reservedNodes m6i.large in
// one zone. Of reservedNodes+2 pods, one per node, the first
// reservedNodes land on the reservation (NodeClaim and Node labelled
// karpenter.sh/capacity-type: reserved with Karpenter's reservation id and
// type labels, the instance in the reservation, its available count down
// to 0) and the other two on-demand, as Karpenter launches reserved
// capacity first (aws/karpenter-provider-aws pkg/providers/instance,
// getCapacityType: reserved, spot, on-demand). Deleting the claims gives
// the reservation its instances back.
func (a *awsEnv) testReservedFirst(t *testing.T) {
	const (
		id            = "cr-0e2e0000000000001"
		typ           = "m6i.large"
		reservedNodes = 3
		overflow      = 2
		pool          = "reserved"
	)
	zone := awsRegion + "a"
	ctx := context.Background()
	a.srv.AddCapacityReservation(ec2test.CapacityReservation{ID: id, OwnerID: "123456789012", InstanceType: typ, Zone: zone,
		Total: reservedNodes, Available: reservedNodes})
	a.ec2NodeClassNamed(t, pool, func(s *v1alpha1.EC2NodeClassSpec) {
		s.CapacityReservationSelectorTerms = []v1alpha1.CapacityReservationSelectorTerm{{ID: id}}
	})
	a.awsPoolOn(t, pool, pool, req(v1alpha1.LabelCapacityType, "reserved", "on-demand"), req(solver.LabelInstanceType, typ))
	ns := a.namespace(t, "aws-reserved")
	sel := map[string]string{v1alpha1.LabelNodePool: pool}
	var pods []*corev1.Pod
	for i := range reservedNodes + overflow {
		// 1.5 CPU: one pod per m6i.large (2 vCPU).
		pods = append(pods, opPod(ns, fmt.Sprintf("reserved-%d", i), "1500m", "2Gi", sel))
	}
	start := time.Now()
	a.createPods(t, pods)
	a.waitRunning(t, ns, len(pods), 60*time.Second)
	took := time.Since(start)
	claims := a.claims(t, pool)
	var reserved, onDemand int
	var cost, reservedCost float64
	for i := range claims {
		c := &claims[i]
		price, err := strconv.ParseFloat(c.Status.PricePerHour, 64)
		if err != nil {
			t.Errorf("NodeClaim %s: price %q: %v", c.Name, c.Status.PricePerHour, err)
		}
		cost += price
		var node corev1.Node
		if err := a.c.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, &node); err != nil {
			t.Errorf("NodeClaim %s: node %q: %v", c.Name, c.Status.NodeName, err)
			continue
		}
		in, ok := instanceByProviderID(a.clusterInstances(), c.Status.ProviderID)
		if !ok {
			t.Errorf("NodeClaim %s: no live instance %s", c.Name, c.Status.ProviderID)
			continue
		}
		switch c.Status.CapacityType {
		case "reserved":
			reserved++
			reservedCost += price
			for what, labels := range map[string]map[string]string{"NodeClaim " + c.Name: c.Labels, "Node " + node.Name: node.Labels} {
				if labels[v1alpha1.LabelCapacityType] != "reserved" || labels[aws.LabelCapacityReservationID] != id || labels[aws.LabelCapacityReservationType] != "default" {
					t.Errorf("%s: capacity type %q, reservation %q of type %q; want reserved, %s, default", what, labels[v1alpha1.LabelCapacityType],
						labels[aws.LabelCapacityReservationID], labels[aws.LabelCapacityReservationType], id)
				}
			}
			if in.CapacityReservationID != id || in.Type != typ || in.Zone != zone {
				t.Errorf("NodeClaim %s: instance %s %s in reservation %q; want %s %s in %s", c.Name, in.Type, in.Zone, in.CapacityReservationID, typ, zone, id)
			}
		case "on-demand":
			onDemand++
			if in.CapacityReservationID != "" || node.Labels[aws.LabelCapacityReservationID] != "" || node.Labels[v1alpha1.LabelCapacityType] == "reserved" {
				t.Errorf("NodeClaim %s launched on-demand, yet its instance is in reservation %q and its node labelled %q/%q", c.Name,
					in.CapacityReservationID, node.Labels[v1alpha1.LabelCapacityType], node.Labels[aws.LabelCapacityReservationID])
			}
		default:
			t.Errorf("NodeClaim %s: capacity type %q, want reserved or on-demand", c.Name, c.Status.CapacityType)
		}
	}
	if reserved != reservedNodes || onDemand != overflow {
		t.Errorf("%d NodeClaims reserved and %d on-demand, want %d and %d (the reservation first, the overflow on-demand)", reserved, onDemand, reservedNodes, overflow)
	}
	if left := a.srv.CapacityReservationAvailable(id); left != 0 {
		t.Errorf("reservation %s has %d instances left, want 0", id, left)
	}
	_, od := a.cheapestOnDemand([]string{typ}, zone)
	t.Logf("reserved: %d pods Running %s after creation on %d nodes: %d in reservation %s ($%.9f/h together), %d on-demand; $%.4f/h in all, against $%.4f/h were every node on-demand",
		len(pods), took.Round(time.Millisecond), len(claims), reserved, id, reservedCost, onDemand, cost, od*float64(len(claims)))

	// The pods go first (else their claims' deletion would plan them
	// again), then the pool and its claims: the reservation gets its
	// instances back.
	if err := a.Client().CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Delete(ctx, &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	for i := range claims {
		if err := a.c.Delete(ctx, &claims[i]); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for i := range claims {
		iid, err := aws.ParseProviderID(claims[i].Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		a.waitInstanceGone(t, iid, 60*time.Second)
	}
	if left := a.srv.CapacityReservationAvailable(id); left != reservedNodes {
		t.Errorf("reservation %s has %d instances left once its nodes are gone, want %d", id, left, reservedNodes)
	}
	a.checkNoLeak(t)
}
