// Package sim is a simulated cloud: a "launch" creates a Node object that
// kwok (sigs.k8s.io/kwok) plays the kubelet of, priced from the embedded
// instance catalog or an instance-type file. It makes a playground of any
// cluster running kwok, and lets tests inject registration delays and
// insufficient-capacity errors per instance type and zone.
//
// The simulated instances are the Nodes themselves: a Node named after the
// NodeClaim, labelled LabelCluster=<cluster name>, with providerID
// sim://<zone>/<name>; the claim's cloud.AnnotationLaunchedDirectly, if
// any, and the SimNodeClass's hash (v1alpha1.AnnotationNodeClassHash) are
// node annotations, as tags on a real instance. A launch with a
// registration delay is held in memory until its Node is created; it is
// lost if the process exits first, as an instance that never booted would
// be.
package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Labels and annotations on simulated nodes.
const (
	// LabelCluster names the cluster (Options.ClusterName) a node was
	// launched for; List returns the nodes carrying it.
	LabelCluster = "sim.rightsize.dev/cluster"
	// LabelNodeClaim names the NodeClaim a node was launched for.
	LabelNodeClaim = "sim.rightsize.dev/nodeclaim"
	// AnnotationPrice is the node's price in dollars per hour.
	AnnotationPrice = "sim.rightsize.dev/price"
	// KwokAnnotation is the annotation kwok selects the nodes it manages by
	// (kwok --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake).
	KwokAnnotation = "kwok.x-k8s.io/node"
	// ProviderIDPrefix starts every simulated providerID.
	ProviderIDPrefix = "sim://"
	// DefaultRegion is the catalog region used when Options.Region is empty.
	DefaultRegion = "us-east-1"
)

// Options configure a Provider.
type Options struct {
	// Client reads SimNodeClasses and creates, reads and deletes Nodes.
	Client client.Client
	// ClusterName is recorded on every node launched; List returns only
	// this cluster's nodes. Required.
	ClusterName string
	// Region picks the embedded catalog's region (DefaultRegion when empty).
	Region string
	// InstanceTypesFile, when set, replaces the embedded catalog for node
	// classes that name no file of their own.
	InstanceTypesFile string
	// Model computes a node's capacity and allocatable from its type.
	Model cloud.NodeModel
	// RegistrationDelay is how long after a launch the Node appears, for
	// node classes that set none.
	RegistrationDelay time.Duration
	// InsufficientCapacity are offerings whose launches always fail, on top
	// of those of each SimNodeClass.
	InsufficientCapacity []v1alpha1.SimOffering
	// NodeAnnotations are put on every node; nil means KwokAnnotation=fake.
	NodeAnnotations map[string]string
}

// RBAC of the simulated cloud: it creates and deletes the Node objects of its
// instances itself (a real cloud's kubelet registers its own Node), so only a
// sim install grants node create: config/sim's ClusterRole, generated from
// these markers, which config.Render adds for --cloud sim.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=rightsize.dev,resources=simnodeclasses,verbs=get;list;watch

// Provider is the simulated cloud. It implements cloud.CloudProvider.
type Provider struct {
	opts Options

	mu      sync.Mutex
	pending map[string]*launch              // NodeClaim name -> launch waiting for its delay
	files   map[string][]cloud.InstanceType // file path ("" = catalog) -> types
}

var _ cloud.CloudProvider = (*Provider)(nil)

// launch is an instance whose Node is not created yet.
type launch struct {
	view   *v1alpha1.NodeClaim
	cancel context.CancelFunc
}

// New returns a simulated cloud.
func New(opts Options) (*Provider, error) {
	if opts.Client == nil {
		return nil, errors.New("sim: a client is required")
	}
	if opts.ClusterName == "" {
		return nil, errors.New("sim: a cluster name is required")
	}
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.NodeAnnotations == nil {
		opts.NodeAnnotations = map[string]string{KwokAnnotation: "fake"}
	}
	p := &Provider{opts: opts, pending: map[string]*launch{}, files: map[string][]cloud.InstanceType{}}
	// Fail early on a bad region or file.
	if _, err := p.types(opts.InstanceTypesFile); err != nil {
		return nil, err
	}
	return p, nil
}

// Name implements cloud.CloudProvider.
func (p *Provider) Name() string { return "sim" }

// types loads (once) the instance types of a file, or of the catalog for "".
func (p *Provider) types(file string) ([]cloud.InstanceType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.files[file]; ok {
		return t, nil
	}
	var types []cloud.InstanceType
	if file == "" {
		cat, err := catalog.Load()
		if err != nil {
			return nil, fmt.Errorf("sim: loading the embedded catalog: %w", err)
		}
		if types, err = cat.InstanceTypes(p.opts.Region); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		for i := range types {
			cloud.PriceSustained(&types[i]) // as explain prices them
		}
	} else {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("sim: reading instance types: %w", err)
		}
		if types, err = cloud.ReadInstanceTypes(file, data); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
	}
	p.files[file] = types
	return types, nil
}

// class is a node class as the simulator reads it.
type class struct {
	name  string
	file  string
	delay time.Duration
	ice   []v1alpha1.SimOffering
	tags  map[string]string
	// hash is the SimNodeClass's static hash; "" for other kinds.
	hash string
	// kubelet is the SimNodeClass's kubelet settings that change
	// allocatable; nil when it sets none.
	kubelet *cloud.Kubelet
}

// class resolves a node class reference. Only SimNodeClasses carry
// settings; any other kind (an imported EC2NodeClass, say) launches with the
// provider's defaults, so that Karpenter manifests run unchanged on the
// simulator.
func (p *Provider) class(ctx context.Context, ref v1alpha1.NodeClassReference) (class, error) {
	c := class{name: ref.Name, file: p.opts.InstanceTypesFile, delay: p.opts.RegistrationDelay, ice: p.opts.InsufficientCapacity}
	if ref.Kind != "SimNodeClass" {
		return c, nil
	}
	var snc v1alpha1.SimNodeClass
	if err := p.opts.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, &snc); err != nil {
		if apierrors.IsNotFound(err) {
			return c, &cloud.NodeClassNotReadyError{NodeClass: "SimNodeClass/" + ref.Name, Reason: "it does not exist"}
		}
		return c, fmt.Errorf("sim: reading SimNodeClass %s: %w", ref.Name, err)
	}
	if snc.Spec.InstanceTypesFile != "" {
		c.file = snc.Spec.InstanceTypesFile
	}
	if d := snc.Spec.RegistrationDelay; d != nil {
		c.delay = d.Duration
	}
	c.ice = append(slices.Clone(c.ice), snc.Spec.InsufficientCapacity...)
	c.tags = snc.Spec.Tags
	c.hash = snc.Spec.Hash()
	k, err := cloud.NewKubelet(snc.Spec.Kubelet)
	if err != nil {
		return c, &cloud.NodeClassNotReadyError{NodeClass: "SimNodeClass/" + ref.Name, Reason: err.Error()}
	}
	c.kubelet = k
	return c, nil
}

// InstanceTypes implements cloud.CloudProvider.
func (p *Provider) InstanceTypes(ctx context.Context, pool *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	c, err := p.class(ctx, pool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	types, err := p.types(c.file)
	if err != nil {
		return nil, &cloud.NodeClassNotReadyError{NodeClass: pool.Spec.Template.Spec.NodeClassRef.Name, Reason: err.Error()}
	}
	out := make([]cloud.InstanceType, len(types))
	for i, t := range types {
		out[i] = t
		out[i].Offerings = slices.Clone(t.Offerings)
		out[i].Kubelet = c.kubelet
	}
	return out, nil
}

// Create implements cloud.CloudProvider. The Node is named after the
// NodeClaim, which makes Create idempotent: a second call returns the
// instance of the first.
func (p *Provider) Create(ctx context.Context, claim *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error) {
	if existing, err := p.lookup(ctx, claim.Name); err == nil {
		return existing, nil
	} else if !cloud.IsNotFound(err) {
		return nil, err
	}
	c, err := p.class(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	types, err := p.types(c.file)
	if err != nil {
		return nil, &cloud.NodeClassNotReadyError{NodeClass: claim.Spec.NodeClassRef.Name, Reason: err.Error()}
	}
	if c.kubelet != nil {
		// The class's kubelet settings size the node, as a kubelet
		// started with them would.
		types = slices.Clone(types)
		for i := range types {
			types[i].Kubelet = c.kubelet
		}
	}
	it, off, err := p.choose(claim, types, c.ice)
	if err != nil {
		return nil, err
	}
	node := p.node(claim, c, it, off)
	view := viewOf(node)
	if c.delay <= 0 {
		if err := p.createNode(ctx, node); err != nil {
			return nil, err
		}
		return viewOf(node), nil
	}
	// The instance "boots" for c.delay; its Node appears afterwards.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	view.CreationTimestamp = metav1.Now()
	p.mu.Lock()
	p.pending[claim.Name] = &launch{view: view, cancel: cancel}
	p.mu.Unlock()
	go func() {
		defer cancel()
		select {
		case <-lctx.Done():
			return
		case <-time.After(c.delay):
		}
		// A failure leaves an instance that never registers: the operator's
		// liveness check replaces it, as it would a real one.
		_ = p.createNode(lctx, node)
		p.mu.Lock()
		if l := p.pending[claim.Name]; l != nil && l.view == view {
			delete(p.pending, claim.Name)
		}
		p.mu.Unlock()
	}()
	return view.DeepCopy(), nil
}

// choose picks the cheapest offering the claim allows and that has
// capacity (the first it lists, for a claim priced by a NodeOverlay), or
// explains why there is none.
func (p *Provider) choose(claim *v1alpha1.NodeClaim, types []cloud.InstanceType, ice []v1alpha1.SimOffering) (*cloud.InstanceType, cloud.Offering, error) {
	var (
		best      *cloud.InstanceType
		bestOff   cloud.Offering
		exhausted []string
	)
	prioritized := claim.Annotations[cloud.AnnotationPriceOverlayApplied] == "true"
	want := requests(claim)
	for i := range types {
		it := &types[i]
		st := p.opts.Model.SolverType(it, p.opts.Region)
		if !want.Fits(st.Allocatable()) {
			continue
		}
		for _, off := range it.Offerings {
			labels := st.Labels
			if !matches(claim.Spec.Requirements, func(k string) (string, bool) {
				switch k {
				case corev1.LabelTopologyZone:
					return off.Zone, true
				case v1alpha1.LabelCapacityType:
					return off.CapacityType, true
				}
				v, ok := labels[k]
				if !ok {
					v, ok = claim.Labels[k]
				}
				return v, ok
			}) {
				continue
			}
			if short(ice, it.Name, off) {
				exhausted = append(exhausted, it.Name+"/"+off.Zone+"/"+off.CapacityType)
				continue
			}
			if best == nil || better(claim, prioritized, it.Name, off, best.Name, bestOff) {
				best, bestOff = it, off
			}
		}
	}
	switch {
	case best != nil:
		return best, bestOff, nil
	case len(exhausted) > 0:
		return nil, cloud.Offering{}, &cloud.InsufficientCapacityError{Offerings: exhausted, Err: errors.New("the simulated cloud is out of them")}
	}
	return nil, cloud.Offering{}, fmt.Errorf("sim: no instance type offered satisfies NodeClaim %s's requirements and resource requests", claim.Name)
}

// better reports whether offering off of type typ is launched rather than
// other of type otherType: the cheaper, and between offerings of one price
// the one the claim lists first (the planned one). A prioritized claim
// (cloud.AnnotationPriceOverlayApplied) is launched on the first it lists,
// whatever the price: types in order, then capacity types, then zones, as
// EC2's "prioritized" allocation strategy takes Karpenter's overrides.
func better(claim *v1alpha1.NodeClaim, prioritized bool, typ string, off cloud.Offering, otherType string, other cloud.Offering) bool {
	if !prioritized && off.Price != other.Price {
		return off.Price < other.Price
	}
	rank := claim.ListedAt
	if a, b := rank(corev1.LabelInstanceTypeStable, typ), rank(corev1.LabelInstanceTypeStable, otherType); a != b {
		return a < b
	}
	if prioritized {
		if a, b := rank(v1alpha1.LabelCapacityType, off.CapacityType), rank(v1alpha1.LabelCapacityType, other.CapacityType); a != b {
			return a < b
		}
	}
	if a, b := rank(corev1.LabelTopologyZone, off.Zone), rank(corev1.LabelTopologyZone, other.Zone); a != b {
		return a < b
	}
	return prioritized && off.Price < other.Price
}

// short reports whether the offering is listed as out of capacity.
func short(ice []v1alpha1.SimOffering, typ string, off cloud.Offering) bool {
	for _, o := range ice {
		if o.InstanceType == typ && (o.Zone == "" || o.Zone == off.Zone) && (o.CapacityType == "" || o.CapacityType == off.CapacityType) {
			return true
		}
	}
	return false
}

// requests converts a claim's resource requests to solver units.
func requests(claim *v1alpha1.NodeClaim) solver.Resources {
	var r solver.Resources
	for i, name := range solver.FixedResourceNames {
		q, ok := claim.Spec.Resources.Requests[corev1.ResourceName(name)]
		if !ok {
			continue
		}
		if i == solver.CPU {
			r[i] = q.MilliValue()
		} else {
			r[i] = q.Value()
		}
	}
	return r
}

// node builds the Node a launch creates: labelled, tainted and sized as a
// kubelet of the type would register it.
func (p *Provider) node(claim *v1alpha1.NodeClaim, c class, it *cloud.InstanceType, off cloud.Offering) *corev1.Node {
	st := p.opts.Model.SolverType(it, p.opts.Region)
	labels := map[string]string{}
	for k, v := range claim.Labels {
		labels[k] = v
	}
	for k, v := range st.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = off.Zone
	labels[v1alpha1.LabelCapacityType] = off.CapacityType
	labels[corev1.LabelHostname] = claim.Name
	labels[LabelCluster] = p.opts.ClusterName
	labels[LabelNodeClaim] = claim.Name
	annotations := map[string]string{AnnotationPrice: strconv.FormatFloat(off.Price, 'f', -1, 64)}
	for k, v := range p.opts.NodeAnnotations {
		annotations[k] = v
	}
	for k, v := range c.tags {
		annotations["sim.rightsize.dev/tag-"+k] = v
	}
	if v := claim.Annotations[cloud.AnnotationLaunchedDirectly]; v != "" {
		annotations[cloud.AnnotationLaunchedDirectly] = v
	}
	if c.hash != "" {
		cloud.StampNodeClassHash(annotations, c.hash, v1alpha1.SimNodeClassHashVersion)
	}
	taints := []corev1.Taint{cloud.UnregisteredTaint}
	taints = append(taints, claim.Spec.Taints...)
	taints = append(taints, claim.Spec.StartupTaints...)
	capacity := resourceList(st.Capacity)
	alloc := resourceList(st.Allocatable())
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: ProviderIDPrefix + off.Zone + "/" + claim.Name, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: alloc,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    labels[corev1.LabelArchStable],
				OperatingSystem: labels[corev1.LabelOSStable],
				KubeletVersion:  "sim",
			},
		},
	}
}

// resourceList converts solver units to a resource list.
func resourceList(r solver.Resources) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i, name := range solver.FixedResourceNames {
		if r[i] == 0 && i == solver.GPU {
			continue
		}
		l[corev1.ResourceName(name)] = cloud.Quantity(i, r[i])
	}
	return l
}

// createNode creates the Node with its status, as a kubelet registers one:
// the API server keeps a Node's status on create, and kwok renders its
// first stage from that create, so it never sees the node without its
// allocatable (kwok's stock stage gives such a node 1k CPU). A Node of the
// same name already there is success.
func (p *Provider) createNode(ctx context.Context, node *corev1.Node) error {
	if err := p.opts.Client.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("sim: creating node %s: %w", node.Name, err)
	}
	return nil
}

// lookup returns the instance launched for the NodeClaim name, or a
// *cloud.NotFoundError.
func (p *Provider) lookup(ctx context.Context, name string) (*v1alpha1.NodeClaim, error) {
	p.mu.Lock()
	l := p.pending[name]
	p.mu.Unlock()
	if l != nil {
		return l.view.DeepCopy(), nil
	}
	var node corev1.Node
	if err := p.opts.Client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &cloud.NotFoundError{ProviderID: name}
		}
		return nil, fmt.Errorf("sim: reading node %s: %w", name, err)
	}
	if node.Labels[LabelCluster] != p.opts.ClusterName || !strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix) {
		return nil, fmt.Errorf("sim: node %s exists and was not launched by the simulator for cluster %s", name, p.opts.ClusterName)
	}
	if node.DeletionTimestamp != nil {
		return nil, &cloud.NotFoundError{ProviderID: node.Spec.ProviderID}
	}
	return viewOf(&node), nil
}

// nameOf returns the node name in a simulated providerID.
func nameOf(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		return "", fmt.Errorf("sim: %q is not a simulated providerID (%szone/name)", providerID, ProviderIDPrefix)
	}
	_, name, ok := strings.Cut(rest, "/")
	if !ok || name == "" {
		return "", fmt.Errorf("sim: %q is not a simulated providerID (%szone/name)", providerID, ProviderIDPrefix)
	}
	return name, nil
}

// Delete implements cloud.CloudProvider.
func (p *Provider) Delete(ctx context.Context, claim *v1alpha1.NodeClaim) error {
	name := claim.Name
	if claim.Status.ProviderID != "" {
		var err error
		if name, err = nameOf(claim.Status.ProviderID); err != nil {
			return err
		}
	}
	p.mu.Lock()
	if l := p.pending[name]; l != nil {
		l.cancel()
		delete(p.pending, name)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	view, err := p.lookup(ctx, name)
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := p.opts.Client.Delete(ctx, node); err != nil {
		if apierrors.IsNotFound(err) {
			return &cloud.NotFoundError{ProviderID: view.Status.ProviderID}
		}
		return fmt.Errorf("sim: deleting node %s: %w", name, err)
	}
	return nil
}

// Get implements cloud.CloudProvider.
func (p *Provider) Get(ctx context.Context, providerID string) (*v1alpha1.NodeClaim, error) {
	name, err := nameOf(providerID)
	if err != nil {
		return nil, err
	}
	view, err := p.lookup(ctx, name)
	if cloud.IsNotFound(err) {
		return nil, &cloud.NotFoundError{ProviderID: providerID}
	}
	return view, err
}

// List implements cloud.CloudProvider: the nodes labelled with this
// cluster's name, and the launches still waiting for their delay.
func (p *Provider) List(ctx context.Context) ([]*v1alpha1.NodeClaim, error) {
	var nodes corev1.NodeList
	if err := p.opts.Client.List(ctx, &nodes, client.MatchingLabels{LabelCluster: p.opts.ClusterName}); err != nil {
		return nil, fmt.Errorf("sim: listing nodes: %w", err)
	}
	var out []*v1alpha1.NodeClaim
	seen := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.DeletionTimestamp != nil || !strings.HasPrefix(n.Spec.ProviderID, ProviderIDPrefix) {
			continue
		}
		seen[n.Name] = true
		out = append(out, viewOf(n))
	}
	p.mu.Lock()
	for name, l := range p.pending {
		if !seen[name] {
			out = append(out, l.view.DeepCopy())
		}
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b *v1alpha1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// viewOf describes a simulated node as the NodeClaim Create returns.
func viewOf(n *corev1.Node) *v1alpha1.NodeClaim {
	labels := map[string]string{}
	for k, v := range n.Labels {
		if k == LabelCluster || k == LabelNodeClaim {
			continue
		}
		labels[k] = v
	}
	name := n.Labels[LabelNodeClaim]
	if name == "" {
		name = n.Name
	}
	var annotations map[string]string
	if v := n.Annotations[cloud.AnnotationLaunchedDirectly]; v != "" {
		annotations = map[string]string{cloud.AnnotationLaunchedDirectly: v}
	}
	annotations = cloud.CopyNodeClassHash(annotations, n.Annotations)
	return &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations, CreationTimestamp: n.CreationTimestamp},
		Status: v1alpha1.NodeClaimStatus{
			ProviderID:   n.Spec.ProviderID,
			ImageID:      "sim",
			Capacity:     n.Status.Capacity.DeepCopy(),
			Allocatable:  n.Status.Allocatable.DeepCopy(),
			InstanceType: n.Labels[corev1.LabelInstanceTypeStable],
			Zone:         n.Labels[corev1.LabelTopologyZone],
			CapacityType: n.Labels[v1alpha1.LabelCapacityType],
			PricePerHour: n.Annotations[AnnotationPrice],
		},
	}
}

// IsDrifted implements cloud.CloudProvider. Simulated instances drift only
// statically: when their SimNodeClass's tags (the settings its Hash covers)
// changed since the launch. Claims of other node class kinds never drift
// here.
func (p *Provider) IsDrifted(ctx context.Context, claim *v1alpha1.NodeClaim) (string, error) {
	ref := claim.Spec.NodeClassRef
	if ref.Kind != "SimNodeClass" {
		return "", nil
	}
	c, err := p.class(ctx, ref)
	if err != nil {
		return "", err
	}
	return cloud.StaticDrift(claim, ref.Kind, ref.Name, c.hash, v1alpha1.SimNodeClassHashVersion), nil
}

// matches reports whether the labels label looks up satisfy every
// requirement.
func matches(reqs []v1alpha1.NodeSelectorRequirement, label func(string) (string, bool)) bool {
	for _, r := range reqs {
		v, ok := label(r.Key)
		switch r.Operator {
		case v1alpha1.NodeSelectorOpIn:
			if !ok || !slices.Contains(r.Values, v) {
				return false
			}
		case v1alpha1.NodeSelectorOpNotIn:
			if ok && slices.Contains(r.Values, v) {
				return false
			}
		case v1alpha1.NodeSelectorOpExists:
			if !ok {
				return false
			}
		case v1alpha1.NodeSelectorOpDoesNotExist:
			if ok {
				return false
			}
		case v1alpha1.NodeSelectorOpGt, v1alpha1.NodeSelectorOpLt:
			if !ok || len(r.Values) != 1 {
				return false
			}
			a, err1 := strconv.ParseInt(v, 10, 64)
			b, err2 := strconv.ParseInt(r.Values[0], 10, 64)
			if err1 != nil || err2 != nil || r.Operator == v1alpha1.NodeSelectorOpGt && a <= b || r.Operator == v1alpha1.NodeSelectorOpLt && a >= b {
				return false
			}
		}
	}
	return true
}
