package plan

import (
	"fmt"
	"strings"
)

// HoursPerMonth converts hourly prices to monthly ones, as AWS does.
const HoursPerMonth = 730

// NewNodeName names the i-th (0-based) proposed node of a plan as the wide
// table and JSON do: new-1, new-2, ...
func NewNodeName(i int) string { return fmt.Sprintf("new-%d", i+1) }

// ExistingNodeNote is what every front end says of a pending pod the plan
// puts on an existing node.
const ExistingNodeNote = "the plan finds room on this existing node; the scheduler has not placed the pod yet, or something the plan cannot see keeps it off (a scheduling gate, another scheduler, the node's conditions)"

// InFlightNote is what every front end says of a pending pod the plan puts
// on the node of NodeClaim claim, launched but not registered yet.
func InFlightNote(claim string) string {
	return "the node launched for it (NodeClaim " + claim + ") is on its way"
}

// Defaults returns what the problem was planned for that its input
// lacked: the sentence saying what the default pool allows ("" when the input has a
// pool) and the names of the EKS DaemonSets every node counts (none when
// the input has DaemonSets or they were not added). The TUI shows them as
// explain does (DefaultsNotices).
func (r *Result) Defaults() (pool string, eksDaemonSets []string) {
	if r.EKSDaemonSets {
		for _, ds := range r.Problem.DaemonSets {
			eksDaemonSets = append(eksDaemonSets, ds.Name)
		}
	}
	return r.DefaultPool, eksDaemonSets
}

// DefaultsNotices are the lines explain prints for what Defaults returns,
// one sentence each; unread are the NodePool resources a live cluster did
// not let be listed, which is why no pool was in the input.
func DefaultsNotices(pool string, eksDaemonSets []string, unread ...string) []string {
	var out []string
	switch {
	case pool != "" && len(unread) > 0:
		out = append(out, fmt.Sprintf("NodePool: none could be read (you may not list %s); planned with %s.", strings.Join(unread, " or "), pool))
	case pool != "":
		out = append(out, fmt.Sprintf("NodePool: none in the input; planned with %s.", pool))
	}
	if len(eksDaemonSets) > 0 {
		out = append(out, fmt.Sprintf("DaemonSets: none in the input; every node counts the ones EKS runs on each node (%s); --no-eks-daemonsets leaves them out.", strings.Join(eksDaemonSets, ", ")))
	}
	return out
}
