// Package disruption evaluates NodePool disruption budgets: how many of a
// pool's nodes may be disrupted at a given moment, for which reasons. Both
// the operator and `explain --consolidation` ask it, so a decision the
// operator makes is one explain can show.
package disruption

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Reasons a node may be disrupted for, as Karpenter names them.
const (
	ReasonUnderutilized = "Underutilized"
	ReasonEmpty         = "Empty"
	ReasonDrifted       = "Drifted"
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

func parseNodes(s string) (value int, percent bool, err error) {
	n, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.Atoi(n)
	if err != nil || v < 0 || (percent && v > 100) {
		return 0, false, fmt.Errorf("nodes %q: want a non-negative count or a percentage up to 100%%", s)
	}
	return v, percent, nil
}

func parseSchedule(s string) (cron.Schedule, error) {
	// Karpenter accepts the standard five fields and the @daily-style macros.
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", s, err)
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
