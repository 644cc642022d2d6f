// Package disruption decides, without reading or changing the cluster,
// which nodes the operator disrupts: NodePool disruption budgets (how many
// of a pool's nodes may be disrupted at a given moment, for which
// reasons), the guards of a look at the cluster (View) and the choice of
// the next actions, carried out together (Choose, Decide). The operator's
// disruption controller carries out what it decides, and `explain
// --consolidation` and the TUI show the same decisions.
package disruption

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
)

// Reasons a node may be disrupted for, as Karpenter names them.
const (
	ReasonUnderutilized = "Underutilized"
	ReasonEmpty         = "Empty"
	ReasonDrifted       = "Drifted"
	// ReasonExpired is the reason of nodes older than their expireAfter;
	// as in Karpenter, expiry is forceful: no budget holds it back.
	ReasonExpired = "Expired"
)

// Budget is one entry of spec.disruption.budgets.
type Budget struct {
	// Nodes is a count ("3") or a percentage of the pool's nodes ("10%").
	Nodes string
	// Schedule (cron, UTC) and Duration make the budget apply only in a
	// window; without a schedule it always applies.
	Schedule string
	Duration time.Duration
	// Reasons limits the budget to these disruption reasons; empty means all.
	Reasons []string
}

// defaultBudget is Karpenter's default when a pool lists none: 10% of nodes.
var defaultBudget = Budget{Nodes: "10%"}

// Validate checks one budget and returns an error naming the field.
func (b *Budget) Validate() error {
	if _, _, err := parseNodes(b.Nodes); err != nil {
		return err
	}
	if b.Schedule == "" {
		if b.Duration != 0 {
			return fmt.Errorf("duration %s needs a schedule", b.Duration)
		}
		return nil
	}
	if b.Duration <= 0 {
		return fmt.Errorf("schedule %q needs a positive duration", b.Schedule)
	}
	if _, err := parseSchedule(b.Schedule); err != nil {
		return err
	}
	return nil
}

// parseNodes and parseSchedule read a budget's fields with the rules the
// API server and import apply (v1alpha1.ParseBudgetNodes,
// ParseBudgetSchedule), so the operator never accepts what the CRD
// refuses (@every) nor skips in silence what it lets through (six fields).
func parseNodes(s string) (value int, percent bool, err error) {
	v, percent, err := v1alpha1.ParseBudgetNodes(s)
	if err != nil {
		return 0, false, fmt.Errorf("nodes: %w", err)
	}
	return v, percent, nil
}

func parseSchedule(s string) (cron.Schedule, error) {
	sched, err := v1alpha1.ParseBudgetSchedule(s)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return sched, nil
}

// active reports whether the budget applies at now: it has no schedule, or
// now falls within duration after one of its scheduled starts.
func (b *Budget) active(now time.Time) bool {
	if b.Schedule == "" {
		return true
	}
	sched, err := parseSchedule(b.Schedule)
	if err != nil {
		return false
	}
	now = now.UTC()
	// The latest start at or before now is the next start after now−duration
	// if that start is not after now.
	start := sched.Next(now.Add(-b.Duration).Add(-time.Second))
	return !start.After(now)
}

// Allowed returns how many more of a pool's nodes may be disrupted now for
// the reason: the smallest budget that applies (percentages of total nodes,
// rounded up as Karpenter does), less the nodes already disrupting, never
// below zero. Without budgets the default of 10% applies.
func Allowed(budgets []Budget, reason string, total, disrupting int, now time.Time) int {
	if len(budgets) == 0 {
		budgets = []Budget{defaultBudget}
	}
	allowed := math.MaxInt
	for i := range budgets {
		b := &budgets[i]
		if len(b.Reasons) > 0 && !contains(b.Reasons, reason) {
			continue
		}
		if !b.active(now) {
			continue
		}
		v, percent, err := parseNodes(b.Nodes)
		if err != nil {
			return 0 // an invalid budget blocks rather than allows
		}
		if percent {
			v = int(math.Ceil(float64(total) * float64(v) / 100))
		}
		allowed = min(allowed, v)
	}
	if allowed == math.MaxInt {
		return math.MaxInt
	}
	return max(0, allowed-disrupting)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// NewBudget reads one entry of spec.disruption.budgets: nodes, the cron
// schedule ("" for none), the duration (0 for none) and the reasons. It
// reports false for a duration without a schedule, which Karpenter
// rejects (and readers warn of), and an error naming the field for a
// budget that is not valid.
func NewBudget(nodes, schedule string, duration time.Duration, reasons []string) (Budget, bool, error) {
	b := Budget{Nodes: nodes, Schedule: schedule, Duration: duration, Reasons: reasons}
	if schedule == "" && duration != 0 {
		return Budget{}, false, nil
	}
	if err := b.Validate(); err != nil {
		return Budget{}, false, err
	}
	return b, true, nil
}

// PoolBudgets reads the disruption budgets of one of our NodePools, as
// NewBudget reads each.
func PoolBudgets(np *v1alpha1.NodePool) ([]Budget, error) {
	var out []Budget
	for i, b := range np.Spec.Disruption.Budgets {
		var schedule string
		if b.Schedule != nil {
			schedule = *b.Schedule
		}
		var duration time.Duration
		if b.Duration != nil {
			duration = b.Duration.Duration
		}
		var reasons []string
		for _, r := range b.Reasons {
			reasons = append(reasons, string(r))
		}
		budget, ok, err := NewBudget(b.Nodes, schedule, duration, reasons)
		if err != nil {
			return nil, fmt.Errorf("NodePool %s: spec.disruption.budgets[%d]: %w", np.Name, i, err)
		}
		if ok {
			out = append(out, budget)
		}
	}
	return out, nil
}

// ReadBudgets reads the disruption budgets of NodePools as written in their
// manifests (snapshot.Manifests.Budgets), by pool name, as NewBudget reads
// each. An error names the first pool, in name order, with a budget that
// is not valid, and the field.
func ReadBudgets(pools map[string][]karpenter.Budget) (map[string][]Budget, error) {
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string][]Budget, len(pools))
	for _, name := range names {
		for i, b := range pools[name] {
			var schedule string
			if b.Schedule != nil {
				schedule = *b.Schedule
			}
			var duration time.Duration
			if b.Duration != "" {
				var err error
				if duration, err = time.ParseDuration(b.Duration); err != nil {
					return nil, fmt.Errorf("NodePool %s: spec.disruption.budgets[%d].duration: %w", name, i, err)
				}
			}
			budget, ok, err := NewBudget(b.Nodes, schedule, duration, b.Reasons)
			if err != nil {
				return nil, fmt.Errorf("NodePool %s: spec.disruption.budgets[%d]: %w", name, i, err)
			}
			if ok {
				out[name] = append(out[name], budget)
			}
		}
	}
	return out, nil
}
