package provisioning

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Snapshot is the solver's view of the cluster that provisioning plans
// with, for the other controllers that plan (disruption): the same pods,
// nodes, in-flight NodeClaims, pools and offerings, so that they decide on
// the same input (disruption.Snapshot).
type Snapshot = disruption.Snapshot

// Snapshot reads the informer cache into the solver's problem exactly as a
// provisioning batch does.
func (p *Provisioner) Snapshot(ctx context.Context) (*Snapshot, error) {
	b, err := p.snapshot(ctx, false)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Problem: b.problem, Pools: b.pools}, nil
}

// Launch creates the NodeClaim of a node the solver planned on the
// snapshot's problem (a consolidation's replacement), as a provisioning
// batch creates its nodes; the provisioner counts it at once, before the
// cache shows it. reason is the disruption's (Underutilized, Drifted, ...).
func (p *Provisioner) Launch(ctx context.Context, s *Snapshot, n *solver.NewNode, reason string) (*v1alpha1.NodeClaim, error) {
	np := s.Pools[n.Pool]
	if np == nil {
		return nil, fmt.Errorf("NodePool %s is not in the snapshot", n.Pool)
	}
	// A batch of its own, of one: the lifecycle opens it as soon as it is
	// ready instead of waiting for siblings.
	claim := p.newClaim(&batch{problem: s.Problem}, np, n, flexibility{}, nil, "replace-"+strconv.FormatInt(time.Now().UnixNano(), 36), 1)
	p.remember(claim, nil, time.Now())
	if err := p.create(ctx, claim, np, metrics.ReasonDisruption, reason); err != nil {
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
