package disruption

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

func TestAllowed(t *testing.T) {
	monday9 := time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC) // a Monday
	tests := []struct {
		name              string
		budgets           []Budget
		reason            string
		total, disrupting int
		now               time.Time
		want              int
	}{
		{"default is 10% rounded up", nil, ReasonUnderutilized, 15, 0, monday9, 2},
		{"count", []Budget{{Nodes: "3"}}, ReasonEmpty, 50, 0, monday9, 3},
		{"disrupting nodes count against it", []Budget{{Nodes: "3"}}, ReasonEmpty, 50, 2, monday9, 1},
		{"never negative", []Budget{{Nodes: "1"}}, ReasonEmpty, 50, 4, monday9, 0},
		{"smallest applying budget wins", []Budget{{Nodes: "50%"}, {Nodes: "2"}}, ReasonEmpty, 10, 0, monday9, 2},
		{"zero blocks", []Budget{{Nodes: "0"}}, ReasonEmpty, 10, 0, monday9, 0},
		{"budget for other reasons does not apply", []Budget{{Nodes: "0", Reasons: []string{ReasonDrifted}}}, ReasonEmpty, 10, 0, monday9, math.MaxInt},
		{"window open", []Budget{{Nodes: "0", Schedule: "0 9 * * 1-5", Duration: time.Hour}}, ReasonEmpty, 10, 0, monday9, 0},
		{"window closed", []Budget{{Nodes: "0", Schedule: "0 9 * * 1-5", Duration: time.Hour}}, ReasonEmpty, 10, 0, monday9.Add(2 * time.Hour), math.MaxInt},
		{"window from the day before", []Budget{{Nodes: "0", Schedule: "@daily", Duration: 10 * time.Hour}}, ReasonEmpty, 10, 0, monday9, 0},
		{"invalid budget blocks", []Budget{{Nodes: "lots"}}, ReasonEmpty, 10, 0, monday9, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Allowed(tc.budgets, tc.reason, tc.total, tc.disrupting, tc.now); got != tc.want {
				t.Errorf("Allowed = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		b       Budget
		wantErr bool
	}{
		{Budget{Nodes: "10%"}, false},
		{Budget{Nodes: "101%"}, true},
		{Budget{Nodes: "-1"}, true},
		{Budget{Nodes: "1", Duration: time.Hour}, true},
		{Budget{Nodes: "1", Schedule: "0 9 * * *"}, true},
		{Budget{Nodes: "1", Schedule: "not cron", Duration: time.Hour}, true},
		{Budget{Nodes: "1", Schedule: "0 9 * * *", Duration: time.Hour}, false},
		{Budget{Nodes: "1", Schedule: "@daily", Duration: time.Hour}, false},
		// The CRD refuses @every; six fields pass its pattern but are no
		// five-field cron: both are refused rather than planned.
		{Budget{Nodes: "1", Schedule: "@every 5m", Duration: time.Hour}, true},
		{Budget{Nodes: "1", Schedule: "0 0 9 * * *", Duration: time.Hour}, true},
		{Budget{Nodes: " 5"}, true},
	}
	for _, tc := range tests {
		if err := tc.b.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("%+v: error %v, want error %v", tc.b, err, tc.wantErr)
		}
	}
}

func TestPoolBudgets(t *testing.T) {
	sched := "0 9 * * mon-fri"
	bad := "not a schedule"
	tests := []struct {
		name    string
		budgets []v1alpha1.Budget
		want    []Budget
		err     string
	}{
		{"none", nil, nil, ""},
		{"a count for some reasons", []v1alpha1.Budget{{Nodes: "1", Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonEmpty}}},
			[]Budget{{Nodes: "1", Reasons: []string{ReasonEmpty}}}, ""},
		{"a window", []v1alpha1.Budget{{Nodes: "0", Schedule: &sched, Duration: &metav1.Duration{Duration: 8 * time.Hour}}},
			[]Budget{{Nodes: "0", Schedule: sched, Duration: 8 * time.Hour}}, ""},
		{"a duration without a schedule is left out", []v1alpha1.Budget{{Nodes: "0", Duration: &metav1.Duration{Duration: time.Hour}}, {Nodes: "20%"}},
			[]Budget{{Nodes: "20%"}}, ""},
		{"a bad count", []v1alpha1.Budget{{Nodes: "lots"}}, nil, "budgets[0]: nodes: \"lots\""},
		{"a bad schedule", []v1alpha1.Budget{{Nodes: "1"}, {Nodes: "1", Schedule: &bad, Duration: &metav1.Duration{Duration: time.Hour}}}, nil, "budgets[1]: schedule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			np.Spec.Disruption.Budgets = tc.budgets
			got, err := PoolBudgets(np)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "NodePool web") {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("budgets %+v, want %+v", got, tc.want)
			}
		})
	}
}
