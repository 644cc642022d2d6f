package v1alpha1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidationPatternsAreTheCRDs checks that the patterns the validation
// applies are the ones the API server gets from config/crd, so the two
// cannot drift apart.
func TestValidationPatternsAreTheCRDs(t *testing.T) {
	crd, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "crd", "rightsize.dev_nodepools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{BudgetNodesPattern, BudgetSchedulePattern, BudgetDurationPattern} {
		if !strings.Contains(string(crd), "pattern: "+p+"\n") {
			t.Errorf("config/crd/rightsize.dev_nodepools.yaml has no pattern %s", p)
		}
	}
	for _, bound := range []string{"maximum: 100", "minimum: 1"} {
		if !strings.Contains(string(crd), bound) {
			t.Errorf("config/crd/rightsize.dev_nodepools.yaml has no %s (spec.weight)", bound)
		}
	}
}

func TestCheckWeight(t *testing.T) {
	for _, tc := range []struct {
		w  int32
		ok bool
	}{{1, true}, {50, true}, {100, true}, {0, false}, {101, false}, {-1, false}} {
		if err := CheckWeight(tc.w); (err == nil) != tc.ok {
			t.Errorf("CheckWeight(%d) = %v, want ok %v", tc.w, err, tc.ok)
		}
	}
}

func TestParseBudgetNodes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		n       int
		percent bool
		ok      bool
	}{
		{"0", 0, false, true},
		{"5", 5, false, true},
		{"1000", 1000, false, true},
		{"0%", 0, true, true},
		{"10%", 10, true, true},
		{"100%", 100, true, true},
		{"101%", 0, false, false},
		{"abc%", 0, false, false},
		{"abc", 0, false, false},
		{"", 0, false, false},
		{" 5", 0, false, false},
		{"+5", 0, false, false},
		{"-1", 0, false, false},
		{"5.5", 0, false, false},
		{"10 %", 0, false, false},
		{"99999999999999999999999", 0, false, false},
	} {
		n, percent, err := ParseBudgetNodes(tc.in)
		if (err == nil) != tc.ok || n != tc.n || percent != tc.percent {
			t.Errorf("ParseBudgetNodes(%q) = %d, %v, %v; want %d, %v, ok %v", tc.in, n, percent, err, tc.n, tc.percent, tc.ok)
		}
	}
}

func TestParseBudgetSchedule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" for valid, else a piece of the error
	}{
		{"0 9 * * mon-fri", ""},
		{"*/5 * * * *", ""},
		{"0 0 1 1 *", ""},
		{"@daily", ""},
		{"@hourly", ""},
		{"@annually", ""},
		{"@midnight", ""},
		{"@every 5m", "not a cron expression of five fields"},
		{"@every 1h30m", "not a cron expression of five fields"},
		{"@dailyx", "not one of"},
		{"0 0 9 * * mon-fri", "has 6 fields"},
		{"TZ=UTC 0 9 * * *", "has 6 fields"},
		{"0 9 * *", "not a cron expression"},
		{"", "not a cron expression"},
		{"a b c d e", `"a b c d e"`},
		{"61 9 * * *", "61"},
	} {
		_, err := ParseBudgetSchedule(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ParseBudgetSchedule(%q) = %v, want valid", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseBudgetSchedule(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestCheckBudgetDuration(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"1h", true}, {"30m", true}, {"1h30m", true}, {"1h30m0s", true}, {"8h0m0s", true}, {"0m", true},
		{"30s", false}, {"1h30m15s", false}, {"1.5h", false}, {"1d", false}, {"", false}, {"0s", false}, {"-1h", false}, {"1m30h", false},
	} {
		if err := CheckBudgetDuration(tc.in); (err == nil) != tc.ok {
			t.Errorf("CheckBudgetDuration(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

func TestNodePoolValidate(t *testing.T) {
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	for _, tc := range []struct {
		name string
		spec NodePoolSpec
		want string // "" for valid, else the error's start
	}{
		{"empty", NodePoolSpec{}, ""},
		{"weight and budgets", NodePoolSpec{Weight: new(int32(100)), Disruption: Disruption{Budgets: []Budget{
			{Nodes: "10%"}, {Nodes: "0", Schedule: new("0 9 * * mon-fri"), Duration: dur(8 * time.Hour)},
		}}}, ""},
		{"weight 101", NodePoolSpec{Weight: new(int32(101))}, "spec.weight: must be between 1 and 100 (101)"},
		{"weight 0", NodePoolSpec{Weight: new(int32(0))}, "spec.weight:"},
		{"bad nodes", NodePoolSpec{Disruption: Disruption{Budgets: []Budget{{Nodes: "1"}, {Nodes: "abc%"}}}}, "spec.disruption.budgets[1].nodes:"},
		{"every", NodePoolSpec{Disruption: Disruption{Budgets: []Budget{{Nodes: "1", Schedule: new("@every 5m"), Duration: dur(time.Hour)}}}}, "spec.disruption.budgets[0].schedule:"},
		{"seconds", NodePoolSpec{Disruption: Disruption{Budgets: []Budget{{Nodes: "1", Schedule: new("@daily"), Duration: dur(90 * time.Second)}}}}, "spec.disruption.budgets[0].duration:"},
		{"schedule alone", NodePoolSpec{Disruption: Disruption{Budgets: []Budget{{Nodes: "1", Schedule: new("@daily")}}}}, "spec.disruption.budgets[0]: a schedule needs a duration"},
		{"duration alone", NodePoolSpec{Disruption: Disruption{Budgets: []Budget{{Nodes: "1", Duration: dur(time.Hour)}}}}, "spec.disruption.budgets[0]: a schedule needs a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&NodePool{Spec: tc.spec}).Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error starting %q", err, tc.want)
			}
		})
	}
}
