package explain

import (
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		arg, want, err string
	}{
		{"web-0", "Pod/web-0", ""},
		{"pod/web-0", "Pod/web-0", ""},
		{"po/web-0", "Pod/web-0", ""},
		{"deployment/web", "Deployment/web", ""},
		{"deploy/web", "Deployment/web", ""},
		{"Deployment.apps/web", "Deployment/web", ""},
		{"sts/db", "StatefulSet/db", ""},
		{"cronjob/nightly", "CronJob/nightly", ""},
		{"service/web", "", `unknown workload type "service"`},
		{"deployment/", "", "want POD, pod/NAME or TYPE/NAME"},
		{"a/b/c", "", "want POD, pod/NAME or TYPE/NAME"},
	}
	for _, tc := range tests {
		w, err := parseWorkload(tc.arg)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.arg, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.arg, err)
		case w.String() != tc.want:
			t.Errorf("%q: %s, want %s", tc.arg, w, tc.want)
		}
	}
}

func TestWorkloadMatches(t *testing.T) {
	tests := []struct {
		workload, pod, owner string
		want                 bool
	}{
		{"web-0", "web-0", "StatefulSet/web", true},
		{"deployment/web", "web-5d8f-x", "Deployment/web", true},
		{"deployment/web", "web2-5d8f-x", "Deployment/web2", false},
		{"statefulset/web", "web-0", "Deployment/web", false},
		{"cronjob/nightly", "nightly-29000000-x", "Job/nightly-29000000", true},
		{"cronjob/nightly", "nightly-extra-1-x", "Job/nightly-extra-1", false},
		{"job/nightly-29000000", "nightly-29000000-x", "Job/nightly-29000000", true},
	}
	for _, tc := range tests {
		w, err := parseWorkload(tc.workload)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.matches(tc.pod, tc.owner); got != tc.want {
			t.Errorf("%s matches %s (%s) = %v, want %v", tc.workload, tc.pod, tc.owner, got, tc.want)
		}
	}
}

func TestExistingNodePrice(t *testing.T) {
	prices := newPriceList([]solver.InstanceType{{Name: "m7i.large", Offerings: []solver.Offering{
		{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.1008},
		{Zone: "us-east-1a", CapacityType: "spot", Price: 0.04},
		{Zone: "us-east-1b", CapacityType: "spot", Price: 0.05},
	}}})
	tests := []struct {
		name  string
		node  solver.Node
		want  float64
		known bool
	}{
		{"zone and capacity type", solver.Node{InstanceType: "m7i.large", Zone: "us-east-1b", CapacityType: "spot"}, 0.05, true},
		{"no capacity type is on-demand", solver.Node{InstanceType: "m7i.large", Zone: "us-east-1a"}, 0.1008, true},
		{"zone not in the catalog", solver.Node{InstanceType: "m7i.large", Zone: "us-east-1f", CapacityType: "spot"}, 0.04, true},
		{"unknown type", solver.Node{InstanceType: "kwok", Zone: "us-east-1a"}, 0, false},
		{"no type label", solver.Node{}, 0, false},
		{"capacity type not offered", solver.Node{InstanceType: "m7i.large", CapacityType: "reserved"}, 0, false},
	}
	for _, tc := range tests {
		got, known := prices.price(&tc.node)
		if got != tc.want || known != tc.known {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, known, tc.want, tc.known)
		}
	}
}
