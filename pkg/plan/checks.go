package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// windowsUnsupported starts every sentence about a Windows pod or pool.
const windowsUnsupported = "Windows nodes are not supported yet"

// CheckFamilies reports an instance family the instance types do not
// have, naming it (as what, e.g. "--instance-family") and the closest
// families they do have: a typo would otherwise plan nothing and blame the
// NodePool. source describes the types, as the reports do.
func CheckFamilies(types []solver.InstanceType, families []string, what, source string) error {
	have := map[string]bool{}
	for i := range types {
		if f := types[i].Labels[cloud.LabelInstanceFamily]; f != "" {
			have[f] = true
		}
	}
	for _, f := range families {
		if have[f] {
			continue
		}
		msg := fmt.Sprintf("%s %q: no such instance family in the %s", what, f, source)
		if near := closest(f, slices.Sorted(maps.Keys(have))); len(near) > 0 {
			msg += "; did you mean " + strings.Join(near, ", ") + "?"
		}
		return errors.New(msg)
	}
	return nil
}

// closest returns the candidates nearest to s in edit distance (up to
// three), when they are near enough to be the likely intent: at most a
// third of s's length away, and one edit for any s.
func closest(s string, candidates []string) []string {
	var best []string
	bestD := max(len(s)/3, 1) + 1
	for _, c := range candidates {
		switch d := snapshot.EditDistance(s, c); {
		case d < bestD:
			best, bestD = []string{c}, d
		case d == bestD && len(best) > 0 && len(best) < 3:
			best = append(best, c)
		}
	}
	return best
}

// excludesLinux reports whether a requirement on kubernetes.io/os rules out
// linux, the only OS the catalogs offer.
func excludesLinux(r *solver.Requirement) bool {
	return r.Key == solver.LabelOS && !r.Matches(solver.MapLabels{solver.LabelOS: "linux"})
}

// windowsOnly reports whether the pod can run on no linux node because it
// selects another OS (kubernetes.io/os=windows): by nodeSelector, or by a
// required node affinity every term of which rules linux out.
func windowsOnly(p *solver.Pod) bool {
	if os, ok := p.NodeSelector[solver.LabelOS]; ok && os != "linux" {
		return true
	}
	if len(p.Affinity) == 0 {
		return false
	}
	for _, term := range p.Affinity {
		if !slices.ContainsFunc(term, func(r solver.Requirement) bool { return excludesLinux(&r) }) {
			return false
		}
	}
	return true
}

// WindowsPools returns one warning per pool whose requirements rule out
// linux nodes (kubernetes.io/os In [windows]): the catalogs have none, so
// the pool can launch nothing. Every front end warns with them.
func WindowsPools(p *solver.Problem) []string {
	var out []string
	for i := range p.Pools {
		for _, r := range p.Pools[i].Requirements {
			if excludesLinux(&r) {
				out = append(out, fmt.Sprintf("NodePool %s requires %s %s [%s]: %s; the pool can launch no node", p.Pools[i].Name,
					r.Key, r.Operator, strings.Join(r.Values, ","), windowsUnsupported))
				break
			}
		}
	}
	return out
}

// UnplacedReason is the sentence for a pod the plan cannot place: the
// solver's reason, unless the pod selects a non-linux OS, whose real
// reason is that no catalog has such nodes (not the instance types it
// searched). Every front end shows a pending pod this sentence.
func UnplacedReason(pod *solver.Pod, reason string) string {
	if windowsOnly(pod) {
		return windowsUnsupported + ": the pod selects kubernetes.io/os " + podOS(pod) + ", and every instance type is linux"
	}
	return reason
}

// podOS names the OS a windowsOnly pod selects.
func podOS(p *solver.Pod) string {
	if os, ok := p.NodeSelector[solver.LabelOS]; ok {
		return os
	}
	for _, r := range p.Affinity[0] {
		if r.Key == solver.LabelOS {
			return r.Operator + " [" + strings.Join(r.Values, ",") + "]"
		}
	}
	return "other than linux"
}
