// Package plan turns a Snapshot into the solver's problem and the prices
// of the nodes it has, once for every front end: explain (offline and
// live), the TUI and the operator's provisioning and disruption all build
// their problem with Build, so that they plan on the same input and a
// decision one makes is one the others show.
package plan

import (
	"errors"
	"slices"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Input is what a problem is built from.
type Input struct {
	// Cluster is a live cluster (snapshot.ReadCluster or FromObjects);
	// nil offline.
	Cluster *snapshot.Cluster
	// Manifests are read offline (snapshot.Read); unused when Cluster is
	// set, whose own Manifests are planned.
	Manifests *snapshot.Manifests
	// InstanceTypes are the types and offerings new nodes may use, and
	// the catalog existing nodes are priced from.
	InstanceTypes []solver.InstanceType
	// Catalog, when set, gives the pools with kubelet settings
	// (Manifests.Kubelets) or node storage (Manifests.Storage) their own
	// instance types (Catalog.ApplyNodeClasses).
	// When nil, pools keep the types they already have.
	Catalog *Catalog
	// Default is the pool planned when the input defines none; nil plans
	// no pool then (the operator launches only for its NodePools). Offline
	// (no Cluster) on the embedded catalog, which models EKS nodes, an
	// input without DaemonSets is planned with EKSDaemonSets unless
	// Default.NoEKSDaemonSets.
	Default *DefaultPool
	// Claims are NodeClaims besides the Cluster's own (Rightsize.Claims),
	// e.g. nodes a front end launched that the cluster does not show yet;
	// a claim named like one of the cluster's is the cluster's.
	Claims []Claim
	// WhatIf overrides the pools' requirements.
	WhatIf WhatIf
	// MinValuesBestEffort relaxes the pools' minValues, as Karpenter's
	// --min-values-policy=BestEffort does (the operator's flag of the
	// same name); by default they are enforced (Strict).
	MinValuesBestEffort bool
}

// Result is the problem built, and how its existing nodes are priced.
type Result struct {
	// Problem has the pods to plan, the pools and instance types, and, for
	// a cluster, its nodes (the NodeClaims' in-flight nodes included) and
	// PDBs. Every existing node's Price is what it costs: the price its
	// NodeClaim recorded, else the catalog's (0 when unknown).
	Problem *solver.Problem
	// Prices are the catalog's prices, for nodes' prices.
	Prices Prices
	// InFlight are the names of the nodes added for NodeClaims no
	// registered Node stands for yet, in Problem.Nodes order.
	InFlight []string
	// DefaultPool says, in one sentence, what the default pool allows when
	// it was planned (the input defines no pool); "" otherwise.
	DefaultPool string
	// Overlays say, one sentence each, what the input's NodeOverlays
	// changed (see applyOverlays).
	Overlays []string
	// Repriced names the instance types some offering of which a
	// NodeOverlay re-priced: a launch allowing one of them is ordered by
	// those prices, which the cloud does not know (see
	// cloud.AnnotationPriceOverlayApplied).
	Repriced map[string]bool
	// Buffers are the CapacityBuffers' virtual pods in Problem.Pods, one
	// entry per buffer in the snapshot's order (see IsBuffer).
	Buffers []BufferRoom
	// EKSDaemonSets is set when the problem's DaemonSets are EKSDaemonSets,
	// added for an offline input that has none.
	EKSDaemonSets bool
}

// Build turns the input into the solver's problem. Existing nodes keep the
// price their NodeClaim recorded (what is paid, which may differ from
// today's catalog), and every NodeClaim whose node has not registered is an
// in-flight node (see InFlightNode), so that no front end proposes again a
// node already launching. The input is not modified.
func Build(in Input) (*Result, error) {
	m := in.Manifests
	if in.Cluster != nil {
		m = &in.Cluster.Manifests
	}
	if m == nil {
		return nil, errors.New("plan: no input: neither a cluster nor manifests")
	}
	r := &Result{Prices: NewPrices(in.InstanceTypes)}
	pools := slices.Clone(m.Pools)
	if len(pools) == 0 && in.Default != nil {
		pool, what, err := in.Default.Pool(in.InstanceTypes)
		if err != nil {
			return nil, err
		}
		pools, r.DefaultPool = []solver.Pool{pool}, what
	}
	daemonSets := m.DaemonSets
	if in.Cluster == nil && len(daemonSets) == 0 && in.Default != nil && !in.Default.NoEKSDaemonSets &&
		in.Catalog != nil && in.Catalog.InstanceTypesFile == "" {
		daemonSets, r.EKSDaemonSets = EKSDaemonSets(), true
	}
	p := &solver.Problem{
		ExtendedResources: m.ExtendedResources,
		Pods:              m.Pods,
		DaemonSets:        daemonSets,
		Pools:             pools,
		InstanceTypes:     in.InstanceTypes,
	}
	p.MinValuesBestEffort = in.MinValuesBestEffort
	r.Buffers = addBuffers(p, m.Buffers)
	r.Problem = p
	if in.Catalog != nil {
		if err := in.Catalog.ApplyNodeClasses(p, m.Kubelets, m.Storage); err != nil {
			return nil, err
		}
		if in.Catalog.InstanceTypesFile == "" {
			// The embedded catalog's sources cannot answer some of the
			// labels Karpenter sets; a file of types says what it says.
			p.UnknownLabels = cloud.UnansweredLabels()
		}
	}
	addAttachLimits(p)
	r.Overlays, r.Repriced = applyOverlays(p, m.Overlays)
	if len(m.Overlays) > 0 {
		r.Prices = NewPrices(p.InstanceTypes)
	}
	if cl := in.Cluster; cl != nil {
		p.Nodes, p.PDBs = slices.Clone(cl.Nodes), cl.PDBs
		for i := range p.Nodes {
			n := &p.Nodes[i]
			// A node of a type a NodeOverlay re-priced costs the overlay's
			// price, as its replacement would, not the price its NodeClaim
			// recorded: otherwise replacing it by its own type is a saving.
			if price, ok := r.Prices.Catalog(n); ok && r.Repriced[n.InstanceType] {
				n.Price = price
				continue
			}
			n.Price, _ = r.Prices.Node(n)
		}
		r.addInFlight(cl, in.Claims)
	}
	addNodeCounts(p)
	in.WhatIf.apply(p)
	return r, nil
}

// addInFlight adds the nodes of the claims that no registered Node stands
// for: not being deleted, and no Node has the claim's name, its
// status.nodeName or its provider ID.
func (r *Result) addInFlight(cl *snapshot.Cluster, extra []Claim) {
	p := r.Problem
	registered := make(map[string]bool, len(cl.Nodes))
	for i := range cl.Nodes {
		registered[cl.Nodes[i].Name] = true
	}
	for i := range cl.Rightsize.NodeObjects {
		if id := cl.Rightsize.NodeObjects[i].Spec.ProviderID; id != "" {
			registered[id] = true
		}
	}
	claims := make([]Claim, 0, len(cl.Rightsize.Claims)+len(extra))
	seen := map[string]bool{}
	for i := range cl.Rightsize.Claims {
		c := ClaimOf(&cl.Rightsize.Claims[i])
		seen[c.Name] = true
		claims = append(claims, c)
	}
	for _, c := range extra {
		if !seen[c.Name] {
			seen[c.Name] = true
			claims = append(claims, c)
		}
	}
	types := make(map[string]*solver.InstanceType, len(p.InstanceTypes))
	for i := range p.InstanceTypes {
		types[p.InstanceTypes[i].Name] = &p.InstanceTypes[i]
	}
	for i := range claims {
		c := &claims[i]
		if c.Deleting || registered[c.Name] || c.NodeName != "" && registered[c.NodeName] || c.ProviderID != "" && registered[c.ProviderID] {
			continue
		}
		typ := types[c.InstanceType]
		if pi := slices.IndexFunc(p.Pools, func(pool solver.Pool) bool { return pool.Name == c.Pool }); pi >= 0 && p.Pools[pi].InstanceTypes != nil {
			// A pool with kubelet settings sizes its nodes itself.
			if j := slices.IndexFunc(p.Pools[pi].InstanceTypes, func(t solver.InstanceType) bool { return t.Name == c.InstanceType }); j >= 0 {
				typ = &p.Pools[pi].InstanceTypes[j]
			}
		}
		n, ok := InFlightNode(c, typ, p.ExtendedResources, p.DaemonSets)
		if !ok {
			continue
		}
		attachLimit(&n, p.ExtendedResources)
		p.Nodes = append(p.Nodes, n)
		r.InFlight = append(r.InFlight, n.Name)
	}
}
