package disruption

import (
	"strings"
)

// Reasons a node is held back by an action chosen earlier that is not done
// yet (see View.Hold).
const (
	heldNode   = "a disruption action chosen earlier is under way on it"
	heldTarget = "pods of a disruption action under way are moving onto it"
)

// Hold keeps a view from planning over actions chosen earlier that are not
// done yet, waiting for their validation or being carried out, so that the
// next actions can be chosen while they run (Karpenter's disruption queue
// does the same with the nodes it marked for deletion):
//   - their nodes are not candidates, take no pods, and count against their
//     pools' budgets as disrupting nodes do;
//   - the nodes their pods move onto take no other action's pods and are
//     not candidates either, so two actions never count on the same room;
//   - each uses one disruption of every PDB whose pods are still on its
//     nodes, as a chosen action does (see Choose).
//
// Choose then replaces a drifted or expired node only when no action is
// held, and chooses no consolidation while such a replacement is held.
// Hold must be called before the view's problem is planned on.
func (v *View) Hold(actions []*Candidate) {
	for _, c := range actions {
		v.held++
		if c.Reason == ReasonDrifted || c.Reason == ReasonExpired {
			v.heldForced = true
		}
		for _, n := range c.Action.Nodes {
			info := v.nodes[n]
			if info == nil {
				continue
			}
			sn := &v.problem.Nodes[info.index]
			if info.disrupting == "" {
				info.disrupting = heldNode
				if sn.Pool != "" && !sn.InFlight {
					v.disrupting[sn.Pool]++
				}
			}
			v.blocked[n] = info.disrupting
			sn.DoNotDisrupt, sn.Unschedulable = true, true
		}
		for _, i := range v.pdbsOf(v.evicted(c.Action.Nodes)) {
			v.problem.PDBs[i].DisruptionsAllowed--
		}
		for _, m := range c.Action.Moves {
			info := v.nodes[m.To]
			if strings.HasPrefix(m.To, "new-") || info == nil {
				continue
			}
			sn := &v.problem.Nodes[info.index]
			sn.DoNotDisrupt, sn.Unschedulable = true, true
			if v.blocked[m.To] == "" {
				v.blocked[m.To] = heldTarget
			}
		}
	}
	v.setNodesAllowed(v.problem.Pools)
}
