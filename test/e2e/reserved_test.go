package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
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

// reservedType is the instance type of the scenarios' capacity
// reservations, all in reservedZone.
const reservedType = "m6i.large"

var reservedZone = awsRegion + "a"

// reservedPool adds an on-demand capacity reservation of size
// m6i.large in reservedZone, an EC2NodeClass and a NodePool of the name
// whose capacityReservationSelectorTerms select it by id (capacity types
// reserved and on-demand, m6i.large only) and a namespace; it returns the
// namespace and pods of n, one per node (1.5 CPU of the type's 2), that
// select the pool.
func (a *awsEnv) reservedPool(t *testing.T, name, id string, size, n int) (string, []*corev1.Pod) {
	t.Helper()
	a.srv.AddCapacityReservation(ec2test.CapacityReservation{ID: id, OwnerID: "123456789012", InstanceType: reservedType, Zone: reservedZone,
		Total: size, Available: size})
	a.ec2NodeClassNamed(t, name, func(s *v1alpha1.EC2NodeClassSpec) {
		s.CapacityReservationSelectorTerms = []v1alpha1.CapacityReservationSelectorTerm{{ID: id}}
	})
	a.awsPoolOn(t, name, name, req(v1alpha1.LabelCapacityType, "reserved", "on-demand"), req(solver.LabelInstanceType, reservedType))
	ns := a.namespace(t, "aws-"+name)
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, opPod(ns, fmt.Sprintf("%s-%d", name, i), "1500m", "2Gi", map[string]string{v1alpha1.LabelNodePool: name}))
	}
	return ns, pods
}

// releaseReservedPool deletes the namespace's pods (else deleting their
// claims would plan them again), the pool and its claims, waits for their
// instances to go, and checks reservation id then has want instances left.
func (a *awsEnv) releaseReservedPool(t *testing.T, ns, pool, id string, want int) {
	t.Helper()
	ctx := context.Background()
	if err := a.Client().CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Delete(ctx, &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	claims := a.claims(t, pool)
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
	if left := a.srv.CapacityReservationAvailable(id); left != want {
		t.Errorf("reservation %s has %d instances left once its nodes are gone, want %d", id, left, want)
	}
	a.checkNoLeak(t)
}

// reservedClaim checks a NodeClaim launched into reservation id: its
// labels, its Node's and its instance say so, as Karpenter labels them
// (karpenter.sh/capacity-type: reserved, karpenter.k8s.aws/capacity-
// reservation-id and -type). An on-demand claim (id "") must say nothing
// of a reservation.
func (a *awsEnv) reservedClaim(t *testing.T, c *v1alpha1.NodeClaim, id string) {
	t.Helper()
	var node corev1.Node
	if err := a.c.Get(context.Background(), client.ObjectKey{Name: c.Status.NodeName}, &node); err != nil {
		t.Errorf("NodeClaim %s: node %q: %v", c.Name, c.Status.NodeName, err)
		return
	}
	in, ok := instanceByProviderID(a.clusterInstances(), c.Status.ProviderID)
	if !ok {
		t.Errorf("NodeClaim %s: no live instance %s", c.Name, c.Status.ProviderID)
		return
	}
	if id == "" {
		if in.CapacityReservationID != "" || node.Labels[aws.LabelCapacityReservationID] != "" || node.Labels[v1alpha1.LabelCapacityType] == "reserved" {
			t.Errorf("NodeClaim %s launched %s, yet its instance is in reservation %q and its node labelled %q/%q", c.Name, c.Status.CapacityType,
				in.CapacityReservationID, node.Labels[v1alpha1.LabelCapacityType], node.Labels[aws.LabelCapacityReservationID])
		}
		return
	}
	for what, labels := range map[string]map[string]string{"NodeClaim " + c.Name: c.Labels, "Node " + node.Name: node.Labels} {
		if labels[v1alpha1.LabelCapacityType] != "reserved" || labels[aws.LabelCapacityReservationID] != id || labels[aws.LabelCapacityReservationType] != "default" {
			t.Errorf("%s: capacity type %q, reservation %q of type %q; want reserved, %s, default", what, labels[v1alpha1.LabelCapacityType],
				labels[aws.LabelCapacityReservationID], labels[aws.LabelCapacityReservationType], id)
		}
	}
	if in.CapacityReservationID != id || in.Type != reservedType || in.Zone != reservedZone {
		t.Errorf("NodeClaim %s: instance %s %s in reservation %q; want %s %s in %s", c.Name, in.Type, in.Zone, in.CapacityReservationID,
			reservedType, reservedZone, id)
	}
}

// testReservedFirst: a NodePool allowing capacity types reserved and
// on-demand, on an EC2NodeClass whose capacityReservationSelectorTerms
// select one on-demand capacity reservation of reservedNodes m6i.large in
// one zone. Of reservedNodes+2 pods, one per node, the first
// reservedNodes land on the reservation (NodeClaim, Node and instance
// say so, its available count goes down to 0) and the other two
// on-demand, as Karpenter launches reserved capacity first
// (aws/karpenter-provider-aws pkg/providers/instance, getCapacityType:
// reserved, spot, on-demand). Deleting the claims gives the reservation
// its instances back.
func (a *awsEnv) testReservedFirst(t *testing.T) {
	const (
		id            = "cr-0e2e0000000000001"
		reservedNodes = 3
		overflow      = 2
		pool          = "reserved"
	)
	ns, pods := a.reservedPool(t, pool, id, reservedNodes, reservedNodes+overflow)
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
		switch c.Status.CapacityType {
		case "reserved":
			reserved++
			reservedCost += price
			a.reservedClaim(t, c, id)
		case "on-demand":
			onDemand++
			a.reservedClaim(t, c, "")
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
	_, od := a.cheapestOnDemand([]string{reservedType}, reservedZone)
	t.Logf("reserved: %d pods Running %s after creation on %d nodes: %d in reservation %s ($%.9f/h together), %d on-demand; $%.4f/h in all, against $%.4f/h were every node on-demand",
		len(pods), took.Round(time.Millisecond), len(claims), reserved, id, reservedCost, onDemand, cost, od*float64(len(claims)))
	a.releaseReservedPool(t, ns, pool, id, reservedNodes)
}

// testReservationFullAtLaunch: the reservation the plan chose is full by
// the time its fleet launches (someone else took its one instance between
// DescribeCapacityReservations and CreateFleet): EC2 refuses with
// ReservationCapacityExceeded, the operator marks the reservation
// unavailable and plans the pod again, and the pod runs on-demand, no pod
// lost, as Karpenter falls back (pkg/providers/instance/instance.go,
// updateUnavailableOfferingsCache marks the reservation unavailable; the
// claim fails with an insufficient capacity error).
func (a *awsEnv) testReservationFullAtLaunch(t *testing.T, op *operatorProc) {
	const (
		id   = "cr-0e2e0000000000002"
		pool = "reserved-full"
	)
	ns, pods := a.reservedPool(t, pool, id, 1, 1)
	var once sync.Once
	var stolen string
	a.srv.SetBeforeAction(func(action string) {
		if action == "CreateFleet" {
			once.Do(func() {
				stolen = a.srv.LaunchInstance(ec2test.Instance{Type: reservedType, Zone: reservedZone, CapacityReservationID: id}).ID
			})
		}
	})
	defer a.srv.SetBeforeAction(nil)
	// The replans of this pool's claims only: another scenario's leftover
	// claim may be replanned meanwhile.
	replans := func() int {
		return len(slices.DeleteFunc(op.records("insufficient capacity; replanning"), func(r map[string]any) bool { return r["nodepool"] != pool }))
	}
	replansBefore := replans()
	start := time.Now()
	a.createPods(t, pods)
	a.waitRunning(t, ns, 1, 60*time.Second)
	took := time.Since(start)
	a.srv.SetBeforeAction(nil)
	refused := slices.DeleteFunc(op.records("fleet refused an offering"), func(r map[string]any) bool { return r["capacityReservation"] != id })
	if len(refused) != 1 || refused[0]["code"] != "ReservationCapacityExceeded" || refused[0]["capacityType"] != "reserved" {
		t.Fatalf("fleet refusals logged for reservation %s: %v; want one ReservationCapacityExceeded", id, refused)
	}
	afterRefusal := time.Since(logTime(t, refused[0]))
	// One replan is the claim refused by the full reservation. A second
	// was seen once in a full TestOperatorAWS run (counted over every pool
	// then); not yet explained, so it is logged rather than refused.
	replanned := replans() - replansBefore
	if replanned < 1 {
		t.Errorf("%d replans of pool %s, want the claim refused by the full reservation replanned", replanned, pool)
	}
	t.Logf("reserved-full: %d replan(s) of pool %s", replanned, pool)
	claims := a.claims(t, pool)
	if len(claims) != 1 || claims[0].Status.CapacityType != "on-demand" {
		t.Fatalf("NodeClaims of pool %s: %d, the first %+v; want one, on-demand", pool, len(claims), claims)
	}
	a.reservedClaim(t, &claims[0], "")
	t.Logf("reserved-full: reservation %s filled elsewhere before the fleet; ReservationCapacityExceeded, then the pod Running on-demand (%s %s) within %s of the refusal, %s after creation",
		id, claims[0].Status.InstanceType, claims[0].Status.Zone, afterRefusal.Round(time.Millisecond), took.Round(time.Millisecond))
	if !a.srv.Terminate(stolen) {
		t.Errorf("the instance launched elsewhere into %s (%q) was not running", id, stolen)
	}
	a.releaseReservedPool(t, ns, pool, id, 1)
}
