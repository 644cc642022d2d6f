package static

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Claim is what the decision reads of one NodeClaim of a static pool that
// is not being deleted.
type Claim struct {
	Name    string
	Created time.Time
	// Launched is set once the claim has an instance and a Node
	// (providerID and nodeName).
	Launched bool
	// Ready is the claim's Ready condition: its node takes pods.
	Ready bool
	// Pods counts the pods bound to its node that have not finished.
	Pods int
	// Replace says why the claim must be replaced (it drifted from its
	// NodePool or node class, or outlived its expireAfter), "" when not.
	Replace string
	// Expired is set when Replace is expiry: replaced whatever the
	// disruption budget, as Karpenter expires forcefully.
	Expired bool
}

// State is one static NodePool as the decision sees it.
type State struct {
	// Replicas is spec.replicas.
	Replicas int64
	// Limit is limits.nodes, math.MaxInt64 when unset. Every claim of the
	// pool counts against it, those being deleted too (their nodes still
	// run), as Karpenter counts them.
	Limit int64
	// Deleting is set when the NodePool is being deleted.
	Deleting bool
	// NotReady says why the pool cannot launch now (its Ready condition,
	// its node class), "" when it can.
	NotReady string
	// Claims are the pool's claims not being deleted, as the cache shows
	// them.
	Claims []Claim
	// Pending counts the claims created that the cache does not show yet.
	Pending int64
	// Terminating counts the pool's claims being deleted.
	Terminating int64
	// DriftBudget is how many more of the pool's nodes its disruption
	// budgets let be disrupted now for reason Drifted, the terminating
	// ones already counted.
	DriftBudget int
}

// Deletion is a claim the decision deletes, and why.
type Deletion struct {
	Name string
	// Replaced is set when the claim is deleted because it drifted or
	// expired and its replacement is Ready; otherwise it is surplus.
	Replaced bool
	// Why is a sentence without its full stop.
	Why string
}

// Decision is what to do to one static pool now.
type Decision struct {
	// Create is how many claims of the pool's template to create.
	Create int64
	// Replacements is how many of Create replace drifted or expired
	// claims (the rest make up for lost or missing ones).
	Replacements int64
	// Delete are the claims to delete, in order.
	Delete []Deletion
	// Wait says why the pool stays short of what it needs (not ready,
	// limits.nodes, a budget), "" when nothing waits.
	Wait string
}

// Decide is the static controller's decision on one pool, as Karpenter's
// static provisioning, deprovisioning and static drift together
// (kubernetes-sigs/karpenter pkg/controllers/static/... and
// pkg/controllers/disruption/staticdrift.go):
//
//   - a pool being deleted gets nothing;
//   - a claim that drifted or expired is replaced first and deleted once a
//     replacement is Ready: a deletion never takes the pool below
//     replicas claims or below replicas Ready ones;
//   - replacements are created while such claims remain, as many at a
//     time as the budgets allow for reason Drifted (expired ones whatever
//     the budget), within limits.nodes; an expired claim with no room
//     under limits.nodes for a replacement is deleted first;
//   - the pool is kept at replicas plus the replacements in flight:
//     claims missing are created (only when the pool is ready, within
//     limits.nodes), surplus deleted, claims not launched yet first, then
//     those that must be replaced anyway, then those whose nodes run the
//     fewest pods, then the newest.
func Decide(s State) Decision {
	var d Decision
	if s.Deleting {
		return d
	}
	n := int64(len(s.Claims)) + s.Pending
	ready := int64(0)
	for _, c := range s.Claims {
		if c.Ready {
			ready++
		}
	}
	claims := slices.Clone(s.Claims)
	slices.SortStableFunc(claims, rank)
	deleted := map[string]bool{}

	// Retire the claims that must be replaced while others are Ready to
	// take their place.
	var retired int64
	for _, c := range claims {
		if c.Replace == "" || n-1 < s.Replicas || c.Ready && ready-1 < s.Replicas {
			continue
		}
		d.Delete = append(d.Delete, Deletion{Name: c.Name, Replaced: true,
			Why: c.Replace + "; a replacement is Ready"})
		deleted[c.Name] = true
		n--
		if c.Ready {
			ready--
		}
		if !c.Expired {
			retired++
		}
	}

	// The replacements wanted in flight.
	var drifted, expired int64
	for _, c := range claims {
		if c.Replace == "" || deleted[c.Name] {
			continue
		}
		if c.Expired {
			expired++
		} else {
			drifted++
		}
	}
	budget := max(int64(s.DriftBudget)-retired, 0)
	inFlight := expired + min(drifted, budget)
	room := max(s.Limit-n-s.Terminating-int64(len(d.Delete)), 0)
	if room == 0 && expired > 0 && n <= s.Replicas {
		// No room for a replacement, and none in flight: an expired
		// claim goes first, as Karpenter expires without waiting for
		// one.
		for _, c := range claims {
			if c.Expired && !deleted[c.Name] {
				d.Delete = append(d.Delete, Deletion{Name: c.Name, Replaced: true,
					Why: c.Replace + "; limits.nodes leaves no room for its replacement first, and expiry does not wait"})
				deleted[c.Name] = true
				n--
				expired--
				inFlight--
				break
			}
		}
	}
	target := s.Replicas + inFlight

	switch {
	case n < target:
		if s.NotReady != "" {
			d.Wait = s.NotReady
			break
		}
		want := target - n
		d.Create = min(want, room)
		short := max(s.Replicas-n, 0)
		d.Replacements = max(d.Create-short, 0)
		if d.Create < want {
			d.Wait = fmt.Sprintf("limits.nodes %d leaves room for %d more (%d claims, %d of them being deleted)",
				s.Limit, room, n+s.Terminating, s.Terminating)
		}
	case n > target:
		surplus := n - target
		for _, c := range claims {
			if surplus == 0 {
				break
			}
			if deleted[c.Name] {
				continue
			}
			d.Delete = append(d.Delete, Deletion{Name: c.Name,
				Why: fmt.Sprintf("the pool keeps %d nodes (spec.replicas)", s.Replicas)})
			deleted[c.Name] = true
			surplus--
		}
	}
	if d.Wait == "" && drifted > min(drifted, budget) {
		d.Wait = fmt.Sprintf("%d drifted claim(s) wait for the disruption budget for reason Drifted", drifted-min(drifted, budget))
	}
	return d
}

// rank orders claims for deletion: not launched first, then those that
// must be replaced, then the fewest pods, then the newest.
func rank(a, b Claim) int {
	return cmp.Or(
		cmpBool(!a.Launched, !b.Launched),
		cmpBool(a.Replace != "", b.Replace != ""),
		cmp.Compare(a.Pods, b.Pods),
		b.Created.Compare(a.Created),
		cmp.Compare(a.Name, b.Name))
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
