package v1alpha1

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"
)

// The patterns the NodePool CRD gives the API server for a disruption
// budget (the +kubebuilder:validation:Pattern markers of Budget; a test
// checks that config/crd carries the same). They are Karpenter v1's.
const (
	// BudgetNodesPattern is the pattern of spec.disruption.budgets[].nodes.
	BudgetNodesPattern = `^((100|[0-9]{1,2})%|[0-9]+)$`
	// BudgetSchedulePattern is the pattern of
	// spec.disruption.budgets[].schedule. As written it is loose (a
	// 6-field cron passes it); ParseBudgetSchedule adds what the
	// operator's parser needs.
	BudgetSchedulePattern = `^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// BudgetDurationPattern is the pattern of
	// spec.disruption.budgets[].duration: hours and minutes only.
	BudgetDurationPattern = `^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
)

var (
	budgetNodesRE    = regexp.MustCompile(BudgetNodesPattern)
	budgetScheduleRE = regexp.MustCompile(BudgetSchedulePattern)
	budgetDurationRE = regexp.MustCompile(BudgetDurationPattern)
)

// WeightMin and WeightMax bound spec.weight, as the CRD does.
const (
	WeightMin = 1
	WeightMax = 100
)

// CheckWeight checks a NodePool's spec.weight against the CRD's bounds.
func CheckWeight(w int32) error {
	if w < WeightMin || w > WeightMax {
		return fmt.Errorf("must be between %d and %d (%d)", WeightMin, WeightMax, w)
	}
	return nil
}

// ParseBudgetNodes reads a budget's nodes as the API server accepts it: a
// count ("5") or a whole percentage from 0% to 100% ("10%"). It returns
// the number and whether it is a percentage.
func ParseBudgetNodes(s string) (n int, percent bool, err error) {
	bad := fmt.Errorf("%q is not a count (\"5\") or a percentage from 0%% to 100%% (\"10%%\")", s)
	if !budgetNodesRE.MatchString(s) {
		return 0, false, bad
	}
	digits, percent := strings.CutSuffix(s, "%")
	n, err = strconv.Atoi(digits)
	if err != nil {
		return 0, false, fmt.Errorf("%q is too large a count", s)
	}
	return n, percent, nil
}

// cronMacros are the @ forms the CRD's schedule pattern lists; @every is
// not one of them, so the API server refuses it.
var cronMacros = []string{"@annually", "@yearly", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// ParseBudgetSchedule reads a budget's schedule: a standard cron
// expression of exactly five fields (minute hour day-of-month month
// day-of-week, in UTC) or one of the macros the CRD lists (@daily,
// @hourly, ...). It refuses what the API server refuses (@every, a
// sentence) and also what the CRD's pattern lets through but no cron
// parser of the five fields reads (six fields, a TZ= prefix, "@dailyx"),
// which would otherwise block that pool's budgets in the operator.
func ParseBudgetSchedule(s string) (cron.Schedule, error) {
	if !budgetScheduleRE.MatchString(s) {
		return nil, fmt.Errorf("%q is not a cron expression of five fields or one of %s", s, strings.Join(cronMacros, ", "))
	}
	if strings.HasPrefix(s, "@") {
		found := false
		for _, m := range cronMacros {
			found = found || s == m
		}
		if !found {
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(cronMacros, ", "))
		}
	} else if n := len(strings.Fields(s)); n != 5 {
		return nil, fmt.Errorf("%q has %d fields; a schedule has five (minute hour day-of-month month day-of-week, UTC)", s, n)
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	return sched, nil
}

// CheckBudgetDuration checks a budget's duration as the CRD's pattern
// does: hours and minutes ("1h", "30m", "1h30m"), optionally followed by
// "0s" as a Go duration prints ("1h30m0s").
func CheckBudgetDuration(s string) error {
	if !budgetDurationRE.MatchString(s) {
		return fmt.Errorf("%q is not hours and minutes, such as 1h, 30m or 1h30m", s)
	}
	return nil
}

// Validate checks what the API server checks of a NodePool's weight and
// disruption budgets, with the rules above, and in addition refuses a
// schedule the operator could not read. The error names the first bad
// field ("spec.disruption.budgets[1].schedule: ..."); the caller names the
// object.
func (np *NodePool) Validate() error {
	if w := np.Spec.Weight; w != nil {
		if err := CheckWeight(*w); err != nil {
			return fmt.Errorf("spec.weight: %w", err)
		}
	}
	for i, b := range np.Spec.Disruption.Budgets {
		p := fmt.Sprintf("spec.disruption.budgets[%d]", i)
		if _, _, err := ParseBudgetNodes(b.Nodes); err != nil {
			return fmt.Errorf("%s.nodes: %w", p, err)
		}
		if b.Schedule != nil {
			if _, err := ParseBudgetSchedule(*b.Schedule); err != nil {
				return fmt.Errorf("%s.schedule: %w", p, err)
			}
		}
		if b.Duration != nil {
			if err := CheckBudgetDuration(b.Duration.Duration.String()); err != nil {
				return fmt.Errorf("%s.duration: %w", p, err)
			}
		}
		if (b.Schedule == nil) != (b.Duration == nil) {
			return fmt.Errorf("%s: a schedule needs a duration and a duration a schedule; set both or neither", p)
		}
	}
	return nil
}
