package provisioning

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Snapshot reads the informer cache into the solver's problem exactly as a
// provisioning batch does, for the other controllers that plan
// (disruption): the same pods, nodes, in-flight NodeClaims, pools and
// offerings, so that they decide on the same input.
func (p *Provisioner) Snapshot(ctx context.Context) (*disruption.Snapshot, error) {
	b, err := p.snapshot(ctx, false)
	if err != nil {
		return nil, err
	}
	return &disruption.Snapshot{Problem: b.problem, Pools: b.pools, Repriced: b.repriced}, nil
}

// Launch creates the NodeClaim of a node the solver planned on the
// snapshot's problem (a consolidation's replacement), as a provisioning
// batch creates its nodes; the provisioner counts it at once, before the
// cache shows it. reason is the disruption's (Underutilized, Drifted, ...);
// pods are the keys (namespace/name) of the pods of the snapshot the node
// is planned to take. Like a provisioning launch, it allows every offering
// that takes the same pods (solver.LaunchOptions, at most the launch price
// premium above the planned one), within the pool's limits and minValues.
func (p *Provisioner) Launch(ctx context.Context, s *disruption.Snapshot, n *solver.NewNode, reason string, pods []string) (*v1alpha1.NodeClaim, error) {
	now := p.opts.Clock.Now()
	return p.launchPlanned(ctx, s, n, pods, replacementPremium(reason, p.opts.LaunchPricePremium), 0,
		"replace-"+strconv.FormatInt(now.UnixNano(), 36), 1, metrics.ReasonDisruption, reason)
}

// SnapshotWith is Snapshot with pods that do not exist — a
// ProvisioningRequest's gang, which Kueue creates only once its capacity
// is there — planned as pending beside the cluster's own. index[i] is
// pods[i]'s index in the problem's pods, or -1 when the pod could not be
// modelled (its reason is among the snapshot's warnings, logged).
func (p *Provisioner) SnapshotWith(ctx context.Context, pods []*corev1.Pod) (s *disruption.Snapshot, index []int, err error) {
	b, err := p.snapshotWith(ctx, false, pods)
	if err != nil {
		return nil, nil, err
	}
	at := make(map[string]int, len(b.problem.Pods))
	for i := range b.problem.Pods {
		at[b.problem.Pods[i].Key()] = i
	}
	index = make([]int, len(pods))
	for i, pod := range pods {
		index[i] = -1
		if j, ok := at[pod.Namespace+"/"+pod.Name]; ok {
			index[i] = j
		}
	}
	return &disruption.Snapshot{Problem: b.problem, Pools: b.pools, Repriced: b.repriced}, index, nil
}

// LaunchGang creates the NodeClaim of one node of a gang planned on a
// SnapshotWith snapshot (a ProvisioningRequest's), as a provisioning batch
// creates its nodes: the offerings that take the same pods within the
// launch price premium and the pool's limits. batch names the gang's
// decision and size is its number of nodes (the claims' batch
// annotations); pods are the keys of the gang's pods planned onto it.
// covered is the share of the node the Commitments cover in the gang's
// plan (plan.Spending.Covered): a covered node is launched on its planned
// offering alone, as a batch's is. No pod is nominated: none exists yet.
func (p *Provisioner) LaunchGang(ctx context.Context, s *disruption.Snapshot, n *solver.NewNode, pods []string, batch string, size int, covered float64) (*v1alpha1.NodeClaim, error) {
	return p.launchPlanned(ctx, s, n, pods, p.opts.LaunchPricePremium, covered, batch, size, metrics.ReasonProvisioning, "")
}

// launchPlanned creates the NodeClaim of node n planned on s's problem to
// take the pods of the given keys, counted at once (before the cache shows
// it), on its planned offering alone when the commitments cover some of it
// (covered > 0, pinCovered); reason and disruptionReason label the
// creation metrics.
func (p *Provisioner) launchPlanned(ctx context.Context, s *disruption.Snapshot, n *solver.NewNode, pods []string, premium, covered float64, batchID string, size int, reason, disruptionReason string) (*v1alpha1.NodeClaim, error) {
	np := s.Pools[n.Pool]
	if np == nil {
		return nil, fmt.Errorf("NodePool %s is not in the snapshot", n.Pool)
	}
	// The pool's instance types and usage as a provisioning batch sees
	// them now, for the limits and minValues of the flexible launch.
	b, err := p.snapshot(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster for the replacement's launch options: %w", err)
	}
	options := [][]solver.LaunchOption{replacementOptions(s.Problem, n, pods, premium)}
	pinCovered(options, []float64{covered})
	flex, refusal := p.flexible(b, np, n, options[0])
	if refusal != "" {
		return nil, fmt.Errorf("node for NodePool %s: %s", np.Name, refusal)
	}
	// A replacement is a batch of its own, of one: the lifecycle opens it
	// as soon as it is ready instead of waiting for siblings.
	now := p.opts.Clock.Now()
	claim := p.newClaim(&batch{problem: s.Problem}, np, n, flex, nil, batchID, size)
	p.remember(claim, nil, now)
	if err := p.create(ctx, claim, np, reason, disruptionReason); err != nil {
		return nil, err
	}
	return claim, nil
}

// Forget drops a NodeClaim created by Launch from the claims the
// provisioner counts before the cache shows them: the disruption
// controller deleted it again (a rolled-back replacement), and counting
// it for another minute would plan pods onto a node that never comes.
func (p *Provisioner) Forget(claim string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.recent, claim)
}

// replacementPremium bounds a replacement's flexible launch for a
// disruption of the given reason. A consolidation's replacement was chosen
// for what it saves: it may fall through to other offerings only at no
// more than its planned price (Karpenter keeps only types cheaper than the
// nodes replaced), or a refused offering would launch a dearer node that
// the next round replaces again. Drift and expiry take what launches take.
func replacementPremium(reason string, configured float64) float64 {
	if reason == string(v1alpha1.DisruptionReasonUnderutilized) {
		return 0
	}
	return configured
}

// replacementOptions is solver.LaunchOptions for a replacement n planned
// on problem p to take the pods of the given keys, wherever they are in p
// (pending or on the nodes being replaced). Nil when a pod is not found:
// then only the planned offering is allowed.
func replacementOptions(p *solver.Problem, n *solver.NewNode, pods []string, maxPremium float64) []solver.LaunchOption {
	byKey := map[string]*solver.Pod{}
	for i := range p.Pods {
		byKey[p.Pods[i].Key()] = &p.Pods[i]
	}
	for i := range p.Nodes {
		for j := range p.Nodes[i].Pods {
			byKey[p.Nodes[i].Pods[j].Key()] = &p.Nodes[i].Pods[j]
		}
	}
	q := *p
	q.Pods = make([]solver.Pod, 0, len(pods))
	node := *n
	node.Pods = make([]int, 0, len(pods))
	for _, key := range pods {
		pod, ok := byKey[key]
		if !ok {
			return nil
		}
		node.Pods = append(node.Pods, len(q.Pods))
		q.Pods = append(q.Pods, *pod)
	}
	return solver.LaunchOptions(&q, &solver.Plan{NewNodes: []solver.NewNode{node}}, maxPremium)[0]
}
