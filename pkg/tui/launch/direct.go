package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// DirectLauncher launches proposed nodes through a cloud provider, for
// clusters where no operator runs (tui --cloud sim|aws). The instance is
// launched for a NodeClaim built in memory exactly as the operator's
// provisioner builds one (name, NodePool labels, pinned requirements,
// requests, node class, taints), so the provider tags it with the same
// cluster, pool and NodeClaim name.
//
// When the NodeClaim CRD is installed and the node's NodePool is a
// rightsize.dev NodePool, the NodeClaim object is created first, under that name, and its status is written after the launch
// (Launched, then Registered and Initialized as the node joins): an
// operator started later finds a claim whose instance exists (providers
// find instances by claim name, so its Create is a no-op) and carries on
// from there, and its garbage collection sees an owned instance. Without
// the CRD (or the NodePool) there is nothing to record the claim in: the
// instance carries the tags and v1alpha1.AnnotationLaunchedDirectly (providers keep
// it as a tag), and an operator installed later adopts it: its garbage
// collector creates the NodeClaim, under the tagged name, once the
// instance's NodePool exists, and never terminates it. The marker goes on
// the instance only in that case: an instance a NodeClaim object records is
// the operator's like any other, collected if that claim is force-deleted.
//
// With no operator, the node's registration is this program's job too
// (Registrar): the claim's labels and taints go onto the node, the planned
// pods are nominated to it once it is Ready, and the unregistered taint
// comes off, as the operator's lifecycle controller would do it.
type DirectLauncher struct {
	// CloudName is the provider's name for messages (sim, aws).
	CloudName string
	// ClusterName is the cluster the provider tags instances with, for
	// the confirmation.
	ClusterName string
	// Cloud returns the provider for a region (the plan's); it is called
	// once per region, with a context that is never cancelled.
	Cloud func(ctx context.Context, region string) (cloud.CloudProvider, error)
	// Client reads NodePools, creates NodeClaims and patches Nodes.
	Client client.Client
	// ClaimsServed reports whether the NodeClaim CRD is installed.
	ClaimsServed func() (bool, error)
	// OperatorRunning, when set, says whether an operator runs (a
	// description of it) or "" if none does. Launching next to a running
	// operator is refused: both would launch for the same claim.
	OperatorRunning func(ctx context.Context) (string, error)
	// LaunchedBy is recorded in v1alpha1.AnnotationLaunchedBy.
	LaunchedBy string
	// Suffix returns the random suffix of claim names (5 letters and
	// digits when nil).
	Suffix func() string

	mu        sync.Mutex
	providers map[string]cloud.CloudProvider
}

var (
	_ Launcher  = (*DirectLauncher)(nil)
	_ Registrar = (*DirectLauncher)(nil)
	_ Resumer   = (*DirectLauncher)(nil)
)

// Summary implements Launcher.
func (l *DirectLauncher) Summary() string {
	return fmt.Sprintf("No operator: this launches the instances directly on %s, tagged for cluster %s.", l.CloudName, l.ClusterName)
}

func (l *DirectLauncher) provider(ctx context.Context, region string) (cloud.CloudProvider, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.providers[region]; p != nil {
		return p, nil
	}
	// The provider outlives this launch (AWS refreshes prices in the
	// background for as long as its context lives).
	p, err := l.Cloud(context.WithoutCancel(ctx), region)
	if err != nil {
		return nil, fmt.Errorf("--cloud %s: %w", l.CloudName, err)
	}
	if l.providers == nil {
		l.providers = map[string]cloud.CloudProvider{}
	}
	l.providers[region] = p
	return p, nil
}

// Launch implements Launcher: NodeClaim object (when the CRD is there),
// instance, claim status.
func (l *DirectLauncher) Launch(ctx context.Context, req Request) (Launched, error) {
	served := false
	if l.ClaimsServed != nil {
		var err error
		if served, err = l.ClaimsServed(); err != nil {
			return Launched{}, err
		}
	}
	if l.OperatorRunning != nil {
		if who, err := l.OperatorRunning(ctx); err == nil && who != "" {
			return Launched{}, fmt.Errorf("%s: %s, so launching on %s directly would race it; run the TUI without --cloud and launches become NodeClaims it launches", req.Name, who, l.CloudName)
		}
	}
	pool := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: req.Node.Pool}}
	if served {
		err := l.Client.Get(ctx, client.ObjectKey{Name: req.Node.Pool}, pool)
		switch {
		case apierrors.IsNotFound(err):
			pool = &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: req.Node.Pool}}
		case err != nil:
			return Launched{}, fmt.Errorf("%s: reading NodePool %s: %w", req.Name, req.Node.Pool, err)
		}
	}
	if pool.Spec.Template.Spec.NodeClassRef.Name == "" && l.CloudName != "sim" {
		return Launched{}, fmt.Errorf("%s: NodePool %q is not a rightsize.dev NodePool, so there is no %s node class to launch it with; create one (kubectl rightsize import converts Karpenter's)", req.Name, req.Node.Pool, l.CloudName)
	}
	suffix := l.Suffix
	if suffix == nil {
		suffix = func() string { return rand.String(5) }
	}
	claim := Claim(pool, req, l.LaunchedBy)
	claim.Name = req.Node.Pool + "-" + suffix()
	claim.Annotations[v1alpha1.AnnotationLaunchedDirectly] = l.CloudName
	p, err := l.provider(ctx, req.Region)
	if err != nil {
		return Launched{}, err
	}
	out := Launched{Claim: claim.Name}
	if served && pool.UID != "" {
		// The claim before the instance: the instance is never without
		// an owner an operator would recognise.
		if err := l.Client.Create(ctx, claim); err != nil {
			return out, fmt.Errorf("%s: creating NodeClaim %s: %w", req.Name, claim.Name, err)
		}
		out.ClaimInCluster = true
	}
	launch := claim.DeepCopy()
	if out.ClaimInCluster {
		delete(launch.Annotations, v1alpha1.AnnotationLaunchedDirectly)
	}
	view, err := p.Create(ctx, launch)
	if err != nil {
		if out.ClaimInCluster {
			_ = l.Client.Delete(context.WithoutCancel(ctx), claim)
		}
		return Launched{}, fmt.Errorf("%s: launching %s on %s: %w", req.Name, req.Node.InstanceType, l.CloudName, err)
	}
	orig := claim.DeepCopy()
	for k, v := range view.Labels {
		if _, ok := claim.Labels[k]; !ok && k != corev1.LabelHostname {
			claim.Labels[k] = v
		}
	}
	s := &claim.Status
	s.ProviderID, s.ImageID = view.Status.ProviderID, view.Status.ImageID
	s.Capacity, s.Allocatable = view.Status.Capacity, view.Status.Allocatable
	s.InstanceType, s.Zone, s.CapacityType, s.PricePerHour = view.Status.InstanceType, view.Status.Zone, view.Status.CapacityType, view.Status.PricePerHour
	claim.SetLaunched(v1alpha1.ReasonLaunched, "launched directly on "+l.CloudName+" by "+l.LaunchedBy)
	out.Direct = claim
	if out.ClaimInCluster {
		if err := l.recordLaunch(ctx, orig, claim); err != nil {
			// The instance runs and the claim names it; the status write
			// is what an operator would redo. Report it without failing.
			return out, fmt.Errorf("%s: launched %s, but recording it on NodeClaim %s failed: %w", req.Name, s.ProviderID, claim.Name, err)
		}
	}
	return out, nil
}

// recordLaunch writes the instance's labels and status on the NodeClaim.
func (l *DirectLauncher) recordLaunch(ctx context.Context, orig, claim *v1alpha1.NodeClaim) error {
	withStatus := claim.DeepCopy()
	if err := l.Client.Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
		return err
	}
	orig = claim.DeepCopy()
	claim.Status = withStatus.Status
	return l.Client.Status().Patch(ctx, claim, client.MergeFrom(orig))
}

// Claim builds the NodeClaim of a proposed node as the operator's
// provisioner does (v1alpha1.NodePool.NewNodeClaim): the pool's node labels
// and annotations, its requirements narrowed to the planned type, zone and
// capacity type, the planned pods' requests, the pool's node class and
// taints, owned by the pool when it exists; and who launched it. The name
// is left to the caller.
func Claim(pool *v1alpha1.NodePool, req Request, launchedBy string) *v1alpha1.NodeClaim {
	n := req.Node
	annotations := map[string]string{
		v1alpha1.AnnotationLaunchedBy:  launchedBy,
		v1alpha1.AnnotationPlannedPods: strconv.Itoa(len(req.Pods)),
	}
	if n.Reason != "" {
		annotations[v1alpha1.AnnotationReason] = n.Reason
	}
	return pool.NewNodeClaim(v1alpha1.NodeClaimOptions{
		InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType,
		Requests: resourceList(n.Requested), Annotations: annotations,
	})
}

// resourceList renders CPU, memory and pods as Kubernetes quantities.
func resourceList(r solver.Resources) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, i := range []int{solver.CPU, solver.Memory, solver.Pods} {
		if r[i] > 0 {
			out[corev1.ResourceName(solver.FixedResourceNames[i])] = cloud.Quantity(i, r[i])
		}
	}
	return out
}

// ErrOperatorRuns says an operator runs: the nodes launched directly
// are its to register (or adopt), not this program's.
var ErrOperatorRuns = errors.New("an operator runs")

// Resumable reports whether node is an instance launched directly on
// cloud (by an earlier run of this program) that is still closed to pods:
// it carries the unregistered taint, and the launch marker is on the node
// or on the NodeClaim that records it (claimAnnotations, nil if none).
func Resumable(cloudName string, node *corev1.Node, claimAnnotations map[string]string) bool {
	if cloudName == "" || !HasUnregisteredTaint(node) || node.Spec.ProviderID == "" {
		return false
	}
	return node.Annotations[v1alpha1.AnnotationLaunchedDirectly] == cloudName || claimAnnotations[v1alpha1.AnnotationLaunchedDirectly] == cloudName
}

// Resume rebuilds what Launch returned for the instance behind a
// Resumable node, so that its registration can be finished (a program
// that quit between launching a node and opening it leaves it tainted):
// the NodeClaim object that records it, or else the cloud's view of the
// instance, named and labelled as it was launched. It returns
// ErrOperatorRuns when an operator runs.
func (l *DirectLauncher) Resume(ctx context.Context, node *corev1.Node) (Launched, error) {
	if l.OperatorRunning != nil {
		if who, err := l.OperatorRunning(ctx); err == nil && who != "" {
			return Launched{}, fmt.Errorf("node %s: %w (%s)", node.Name, ErrOperatorRuns, who)
		}
	}
	region := node.Labels[corev1.LabelTopologyRegion]
	if region == "" {
		return Launched{}, fmt.Errorf("node %s has no %s label to find its instance's region by", node.Name, corev1.LabelTopologyRegion)
	}
	p, err := l.provider(ctx, region)
	if err != nil {
		return Launched{}, err
	}
	view, err := p.Get(ctx, node.Spec.ProviderID)
	if err != nil {
		return Launched{}, fmt.Errorf("node %s: reading instance %s on %s: %w", node.Name, node.Spec.ProviderID, l.CloudName, err)
	}
	served := false
	if l.ClaimsServed != nil {
		if served, err = l.ClaimsServed(); err != nil {
			return Launched{}, err
		}
	}
	if served {
		var claim v1alpha1.NodeClaim
		err := l.Client.Get(ctx, client.ObjectKey{Name: view.Name}, &claim)
		switch {
		case err == nil && claim.Annotations[v1alpha1.AnnotationLaunchedDirectly] == l.CloudName:
			if claim.Status.ProviderID == "" {
				// The launch's status write never landed: the
				// instance's view has it.
				claim.Status = view.Status
			}
			return Launched{Claim: claim.Name, ClaimInCluster: true, Direct: &claim}, nil
		case err != nil && !apierrors.IsNotFound(err):
			return Launched{}, fmt.Errorf("node %s: reading NodeClaim %s: %w", node.Name, view.Name, err)
		}
	}
	if node.Annotations[v1alpha1.AnnotationLaunchedDirectly] != l.CloudName {
		return Launched{}, fmt.Errorf("node %s was not launched directly on %s", node.Name, l.CloudName)
	}
	return Launched{Claim: view.Name, Direct: view}, nil
}

// Register implements Registrar, mirroring the operator's lifecycle
// controller: the claim's labels and taints go on the node (and an owner
// reference to the NodeClaim object, if there is one), and the claim
// records the node.
func (l *DirectLauncher) Register(ctx context.Context, launched Launched, nodeName string) (bool, error) {
	claim := launched.Direct
	if claim == nil {
		return false, errors.New("register: not a direct launch")
	}
	node, err := l.updateNode(ctx, claim, nodeName, func(n *corev1.Node) {
		claim.ApplyToNode(n, launched.ClaimInCluster)
	})
	if node == nil || err != nil {
		if err != nil {
			err = fmt.Errorf("registering node %s: %w", nodeName, err)
		}
		return false, err
	}
	usable := claim.Usable(node)
	if launched.ClaimInCluster {
		err := l.recordConditions(ctx, claim.Name, func(c *v1alpha1.NodeClaim) {
			if !c.IsInitialized() {
				c.SetRegistered(node.Name)
			} else {
				c.Status.NodeName = node.Name
				c.SetCondition(v1alpha1.ConditionRegistered, metav1.ConditionTrue, v1alpha1.ReasonRegistered, "")
			}
		})
		if err != nil {
			return usable, err
		}
	}
	return usable, nil
}

// Nominate implements Registrar.
func (l *DirectLauncher) Nominate(ctx context.Context, pods []string, node string) error {
	patch := []byte(fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, node))
	var errs []error
	for _, key := range pods {
		ns, name, _ := strings.Cut(key, "/")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := l.Client.Status().Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("nominating pod %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// Open implements Registrar: the unregistered taint comes off and the
// claim is Initialized and Ready.
func (l *DirectLauncher) Open(ctx context.Context, launched Launched, nodeName string) error {
	claim := launched.Direct
	if claim == nil {
		return errors.New("open: not a direct launch")
	}
	node, err := l.updateNode(ctx, claim, nodeName, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintKeyUnregistered })
	})
	if err != nil {
		return fmt.Errorf("opening node %s to pods: %w", nodeName, err)
	}
	if node == nil {
		return fmt.Errorf("node %s is gone", nodeName)
	}
	if !launched.ClaimInCluster {
		return nil
	}
	return l.recordConditions(ctx, claim.Name, func(c *v1alpha1.NodeClaim) {
		c.SetInitialized()
	})
}

// updateNode applies change to the instance's node and patches what
// changed, guarded by the node's resourceVersion and retried on conflict
// (the kubelet, or kwok, writes the node's status all the time). It returns
// the node as written; nil, nil if there is no node yet.
func (l *DirectLauncher) updateNode(ctx context.Context, claim *v1alpha1.NodeClaim, name string, change func(*corev1.Node)) (*corev1.Node, error) {
	var node *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if node, err = l.node(ctx, claim, name); node == nil || err != nil {
			return err
		}
		orig := node.DeepCopy()
		change(node)
		if equality.Semantic.DeepEqual(orig, node) {
			return nil
		}
		return l.Client.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	return node, err
}

// node reads the node and checks it is the instance's; nil if not there.
func (l *DirectLauncher) node(ctx context.Context, claim *v1alpha1.NodeClaim, name string) (*corev1.Node, error) {
	var node corev1.Node
	if err := l.Client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	if node.Spec.ProviderID != claim.Status.ProviderID {
		return nil, fmt.Errorf("node %s has providerID %q, not the launched instance's %q", name, node.Spec.ProviderID, claim.Status.ProviderID)
	}
	return &node, nil
}

// recordConditions updates the NodeClaim object's status; a claim gone is
// no error (someone deleted it).
func (l *DirectLauncher) recordConditions(ctx context.Context, name string, update func(*v1alpha1.NodeClaim)) error {
	var cur v1alpha1.NodeClaim
	if err := l.Client.Get(ctx, client.ObjectKey{Name: name}, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	orig := cur.DeepCopy()
	update(&cur)
	if equality.Semantic.DeepEqual(orig.Status, cur.Status) {
		return nil
	}
	if err := l.Client.Status().Patch(ctx, &cur, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("recording on NodeClaim %s: %w", name, err)
	}
	return nil
}

// HasUnregisteredTaint reports whether pods are still kept off the node.
func HasUnregisteredTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintKeyUnregistered })
}

// Operator describes the holder of a fresh operator Lease.
type Operator struct {
	// Lease is namespace/name; Holder its holderIdentity; Renewed how long
	// before the look it was last renewed.
	Lease, Holder string
	Renewed       time.Duration
}

// String is "Lease ns/name held by holder, renewed 3s ago".
func (o *Operator) String() string {
	return fmt.Sprintf("Lease %s held by %s, renewed %s ago", o.Lease, o.Holder, o.Renewed.Round(time.Second))
}

// FreshLease looks for the operator's leader-election Lease (named lease,
// in any namespace) held and renewed within its duration at now: then an
// operator runs and it is returned, else nil. Errors (no right to list
// Leases, say) are returned for the caller to judge.
func FreshLease(ctx context.Context, kube kubernetes.Interface, lease string, now time.Time) (*Operator, error) {
	if lease == "" {
		return nil, nil
	}
	list, err := kube.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + lease})
	if err != nil {
		return nil, fmt.Errorf("reading the operator's Lease %s: %w", lease, err)
	}
	return freshLease(list.Items, now), nil
}

// OperatorRunning is FreshLease as a sentence: "an operator runs (Lease
// …)" when one does, else "".
func OperatorRunning(ctx context.Context, kube kubernetes.Interface, lease string, now time.Time) (string, error) {
	op, err := FreshLease(ctx, kube, lease, now)
	if err != nil || op == nil {
		return "", err
	}
	return "an operator runs (" + op.String() + ")", nil
}

// HeldLease describes the first lease held and renewed within its
// duration at now, or returns "".
func HeldLease(leases []coordinationv1.Lease, now time.Time) string {
	if op := freshLease(leases, now); op != nil {
		return "an operator runs (" + op.String() + ")"
	}
	return ""
}

// freshLease returns the holder of the first lease held and renewed
// within its duration at now, or nil.
func freshLease(leases []coordinationv1.Lease, now time.Time) *Operator {
	for _, l := range leases {
		s := l.Spec
		if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
			continue
		}
		if age := now.Sub(s.RenewTime.Time); age <= time.Duration(*s.LeaseDurationSeconds)*time.Second {
			return &Operator{Lease: l.Namespace + "/" + l.Name, Holder: *s.HolderIdentity, Renewed: age}
		}
	}
	return nil
}
