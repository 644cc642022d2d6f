// Package launch makes proposed nodes real, in one of two ways. With the
// operator, it creates NodeClaims (NodeClaimLauncher) and the operator's
// NodeClaim controller launches the instance, registers the node and keeps
// it; the TUI only watches it arrive. Without it (tui --cloud sim|aws),
// DirectLauncher launches through the cloud provider itself, for a
// NodeClaim built as the operator would build it, and registers the node.
// NodeClaimLauncher uses the dynamic client, so that it needs nothing but
// the resource name.
package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Resources and labels of the rightsize.dev API the claims use.
var (
	NodeClaims = v1alpha1.SchemeGroupVersion.WithResource("nodeclaims")
	NodePools  = v1alpha1.SchemeGroupVersion.WithResource("nodepools")
)

// ErrNoCRDs says the NodeClaim CRD is not installed; its message says what to do.
var ErrNoCRDs = errors.New("the NodeClaim CRD (nodeclaims.rightsize.dev) is not installed: install the operator's CRDs (kubectl rightsize operator install), then launch again")

// Request is one proposed node to launch.
type Request struct {
	// Name is the plan's name for it (new-1), for messages.
	Name string
	Node solver.NewNode
	// Pods are the keys of the pods it was planned for.
	Pods []string
	// Region is the region the plan priced the node in; a direct launch
	// launches there.
	Region string
	// InFlight names the in-flight NodeClaims the plan counted as
	// capacity. With an operator running, a NodeClaim in flight that is
	// not among them was created after the plan, by a batch that saw the
	// plan's pending pods: the operator provisions them already.
	InFlight []string
}

// Launched says what a launch created.
type Launched struct {
	// Claim names the NodeClaim: the object created in the cluster or, for
	// a direct launch without the NodeClaim CRD, the name the instance is
	// tagged with.
	Claim string
	// ClaimInCluster reports whether a NodeClaim object exists for it.
	ClaimInCluster bool
	// Direct is set when the instance was launched through the cloud
	// provider by this program: the claim it was launched for, with the
	// labels and status (providerID, type, zone, price) the cloud returned.
	Direct *v1alpha1.NodeClaim
}

// Launcher creates what makes a proposed node real.
type Launcher interface {
	// Launch makes one proposed node real.
	Launch(ctx context.Context, req Request) (Launched, error)
	// Summary says in one sentence, for the confirmation, what a launch
	// creates and who launches the instance.
	Summary() string
}

// Registrar is a Launcher that launches instances itself (no operator) and
// so must also do the operator's part once the node joins, in three steps
// as the operator's lifecycle controller takes them: Register the node
// (the claim's labels, taints and owner on it); once it is usable, Nominate
// the pods planned for it, so that the scheduler places them as planned;
// then Open it to pods by removing the unregistered taint.
type Registrar interface {
	// Register puts the claim's labels and taints on the node and
	// reports whether it is usable: Ready, with no startup or not-ready
	// taints left. A node not there yet is not usable and no error.
	Register(ctx context.Context, l Launched, node string) (usable bool, err error)
	// Nominate sets status.nominatedNodeName of the pods (namespace/name
	// keys) to the node.
	Nominate(ctx context.Context, pods []string, node string) error
	// Open removes the unregistered taint, letting the scheduler in.
	Open(ctx context.Context, l Launched, node string) error
}

// Resumer is a Registrar that takes up, in a later run, the registration
// of nodes it launched: a program that quits between launching a node and
// opening it would otherwise leave it tainted, paid for and unused.
type Resumer interface {
	Registrar
	// Resume rebuilds what Launch returned for a node that Resumable
	// accepts.
	Resume(ctx context.Context, node *corev1.Node) (Launched, error)
}

// Prober is a Launcher whose Summary depends on the cluster: Probe looks
// again (the program calls it as the confirmation opens, then draws the
// confirmation again).
type Prober interface {
	Probe(ctx context.Context)
}

// NodeClaimLauncher creates rightsize.dev/v1alpha1 NodeClaims.
type NodeClaimLauncher struct {
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Kube reads the operator's Lease and the planned pods. Without it the
	// launcher cannot tell whether an operator runs, and neither refuses
	// nor says who launches.
	Kube kubernetes.Interface
	// OperatorLease names the operator's leader-election Lease
	// (v1alpha1.OperatorLeaseName when "").
	OperatorLease string
	// LaunchedBy is recorded in v1alpha1.AnnotationLaunchedBy.
	LaunchedBy string
	// Now tells the time the Lease's freshness is judged at (time.Now
	// when nil).
	Now func() time.Time

	mu sync.Mutex
	// probed says the last look at the Lease ended; operator is what it
	// found (nil: none fresh) and probeErr why it could not look.
	probed   bool
	operator *Operator
	probeErr error
}

var _ Prober = (*NodeClaimLauncher)(nil)

// Launch creates the NodeClaim of the proposed node as the operator's
// provisioner would (Claim): pinned to the node's instance type, zone and
// capacity type, in its NodePool, with the node class and taints of that
// NodePool, requesting what the planned pods request. Right before, it
// looks at the operator's Lease: when an operator runs and already
// provisions the pods (provisioned), it refuses, since the operator would
// launch for them too.
func (l *NodeClaimLauncher) Launch(ctx context.Context, req Request) (Launched, error) {
	name, err := l.launch(ctx, req)
	return Launched{Claim: name, ClaimInCluster: err == nil}, err
}

// Probe implements Prober: it looks whether the operator's Lease is held.
func (l *NodeClaimLauncher) Probe(ctx context.Context) {
	_, _ = l.lookForOperator(ctx)
}

// lookForOperator reads the operator's Lease and records what it found
// for Summary.
func (l *NodeClaimLauncher) lookForOperator(ctx context.Context) (*Operator, error) {
	if l.Kube == nil {
		return nil, nil
	}
	lease := l.OperatorLease
	if lease == "" {
		lease = v1alpha1.OperatorLeaseName
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	op, err := FreshLease(ctx, l.Kube, lease, now())
	l.mu.Lock()
	l.probed, l.operator, l.probeErr = true, op, err
	l.mu.Unlock()
	return op, err
}

// Summary implements Launcher: who launches the instances, as the last
// look at the operator's Lease found.
func (l *NodeClaimLauncher) Summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.Kube == nil:
		return "This creates NodeClaims; an operator, if one runs, launches the instances."
	case !l.probed:
		return "This creates NodeClaims; checking whether an operator runs to launch them…"
	case l.probeErr != nil:
		return fmt.Sprintf("This creates NodeClaims; whether an operator runs to launch them is unknown (%s).", oneLine(l.probeErr.Error()))
	case l.operator != nil:
		return fmt.Sprintf("This creates NodeClaims; the operator (%s) launches the instances.", l.operator)
	}
	return "No operator is running: this creates NodeClaims, and each stays pending until one does (kubectl rightsize operator install deploys it)."
}

func (l *NodeClaimLauncher) launch(ctx context.Context, req Request) (string, error) {
	if ok, err := Served(l.Discovery, NodeClaims); err != nil {
		return "", err
	} else if !ok {
		return "", ErrNoCRDs
	}
	// A Lease that cannot be read (no right to list Leases, say) refuses
	// nothing: the NodeClaim is created as before the check existed.
	if op, err := l.lookForOperator(ctx); err == nil && op != nil {
		why, err := l.provisioned(ctx, req)
		if err != nil {
			return "", fmt.Errorf("%s: %w", req.Name, err)
		}
		if why != "" {
			return "", fmt.Errorf("%s: not launched: the operator (%s) already provisions these pods: %s; a second node for them would stay empty", req.Name, op, why)
		}
	}
	n := req.Node
	pool, err := l.Dynamic.Resource(NodePools).Get(ctx, n.Pool, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("%s: NodePool %q is not a rightsize.dev NodePool, so the operator would not know which node class to launch it with; create one (kubectl rightsize import converts Karpenter's)", req.Name, n.Pool)
	case err != nil:
		return "", fmt.Errorf("%s: reading NodePool %s: %w", req.Name, n.Pool, err)
	}
	var np v1alpha1.NodePool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pool.Object, &np); err != nil {
		return "", fmt.Errorf("%s: reading NodePool %s: %w", req.Name, n.Pool, err)
	}
	if np.Spec.Template.Spec.NodeClassRef.Name == "" {
		return "", fmt.Errorf("%s: NodePool %s has no spec.template.spec.nodeClassRef", req.Name, n.Pool)
	}
	typed := Claim(&np, req, l.LaunchedBy)
	typed.GenerateName = n.Pool + "-"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return "", fmt.Errorf("%s: building the NodeClaim: %w", req.Name, err)
	}
	claim := &unstructured.Unstructured{Object: obj}
	created, err := l.Dynamic.Resource(NodeClaims).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("%s: creating the NodeClaim: %w", req.Name, err)
	}
	return created.GetName(), nil
}

// provisioned says how the running operator already provisions the
// request's pods, or "" when nothing shows it does: a NodeClaim in flight
// that the plan did not count (req.InFlight) and this program did not
// create, or one of the pods bound or nominated to a node meanwhile.
func (l *NodeClaimLauncher) provisioned(ctx context.Context, req Request) (string, error) {
	list, err := l.Dynamic.Resource(NodeClaims).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing NodeClaims in flight: %w", err)
	}
	known := map[string]bool{}
	for _, name := range req.InFlight {
		known[name] = true
	}
	var unseen []string
	for i := range list.Items {
		var c v1alpha1.NodeClaim
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &c); err != nil {
			return "", fmt.Errorf("reading NodeClaim %s: %w", list.Items[i].GetName(), err)
		}
		if c.DeletionTimestamp != nil || c.IsInitialized() || known[c.Name] || c.Annotations[v1alpha1.AnnotationLaunchedBy] == l.LaunchedBy {
			continue
		}
		unseen = append(unseen, c.Name)
	}
	if len(unseen) > 0 {
		slices.Sort(unseen)
		more := ""
		if len(unseen) > 1 {
			more = fmt.Sprintf(" and %d more", len(unseen)-1)
		}
		return fmt.Sprintf("NodeClaim %s%s, created since this plan, is in flight for the pending pods", unseen[0], more), nil
	}
	for _, key := range req.Pods {
		ns, name, ok := strings.Cut(key, "/")
		if !ok {
			continue
		}
		pod, err := l.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return "", fmt.Errorf("reading pod %s: %w", key, err)
		case pod.Spec.NodeName != "":
			return fmt.Sprintf("pod %s is bound to node %s", key, pod.Spec.NodeName), nil
		case pod.Status.NominatedNodeName != "":
			return fmt.Sprintf("pod %s is nominated to node %s", key, pod.Status.NominatedNodeName), nil
		}
	}
	return "", nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Served reports whether the API server serves the resource (its CRD is
// installed).
func Served(d discovery.DiscoveryInterface, gvr schema.GroupVersionResource) (bool, error) {
	res, err := d.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range res.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}
