package static

import (
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)

// up is a launched, Ready claim with pods, created age minutes before t0.
func up(name string, pods, age int) Claim {
	return Claim{Name: name, Launched: true, Ready: true, Pods: pods, Created: t0.Add(-time.Duration(age) * time.Minute)}
}

// drifted is up, drifted.
func drifted(name string, pods, age int) Claim {
	c := up(name, pods, age)
	c.Replace = "NodePool static now labels its nodes rev=2"
	return c
}

// expired is up, expired.
func expired(name string, pods, age int) Claim {
	c := up(name, pods, age)
	c.Replace, c.Expired = "it is 2h0m0s old and its expireAfter is 1h0m0s", true
	return c
}

// launching is a claim not launched yet.
func launching(name string) Claim { return Claim{Name: name, Created: t0} }

// starting is a launched claim whose node is not Ready yet.
func starting(name string) Claim { return Claim{Name: name, Launched: true, Created: t0} }

// TestDecide checks the static controller's decisions, written from
// kubernetes-sigs/karpenter pkg/controllers/static/provisioning/suite_test.go
// (replicas made up, limits.nodes respected, a NotReady pool or one being
// deleted launches nothing), .../static/deprovisioning/suite_test.go
// (surplus deleted, empty nodes first) and
// pkg/controllers/disruption/staticdrift_test.go (a drifted static node
// replaced within the budget and limits.nodes).
func TestDecide(t *testing.T) {
	noLimit := int64(math.MaxInt64)
	for _, tt := range []struct {
		name         string
		s            State
		create       int64
		replacements int64
		del          []string // in order
		replaced     bool     // the deletions are replacements
		wait         string   // a substring of Wait, "" for none
	}{
		{name: "a new pool gets its replicas", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1},
			create: 3},
		{name: "a lost claim is made up", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{up("a", 1, 10), up("b", 0, 10)}, Terminating: 1},
			create: 1},
		{name: "claims created but not in the cache yet count", s: State{Replicas: 3, Limit: noLimit,
			Claims: []Claim{up("a", 1, 10)}, Pending: 2}},
		{name: "at replicas nothing is done", s: State{Replicas: 2, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{up("a", 1, 10), up("b", 0, 10)}}},
		{name: "limits.nodes bounds the launch", s: State{Replicas: 3, Limit: 2,
			Claims: []Claim{up("a", 0, 10)}},
			create: 1, wait: "limits.nodes 2 leaves room for 1 more"},
		{name: "claims being deleted count against limits.nodes", s: State{Replicas: 3, Limit: 3,
			Claims: []Claim{up("a", 0, 10), up("b", 0, 10)}, Terminating: 1},
			wait: "limits.nodes 3 leaves room for 0 more"},
		{name: "a pool being deleted creates nothing", s: State{Replicas: 3, Limit: noLimit, Deleting: true, DriftBudget: 1}},
		{name: "a pool being deleted deletes nothing either", s: State{Replicas: 1, Limit: noLimit, Deleting: true,
			Claims: []Claim{up("a", 0, 10), up("b", 0, 10)}}},
		{name: "a pool not ready creates nothing and says why", s: State{Replicas: 3, Limit: noLimit,
			NotReady: "its node class SimNodeClass sim is not ready: it does not exist", Claims: []Claim{up("a", 0, 10)}},
			wait: "SimNodeClass sim is not ready"},
		{name: "a pool not ready still scales down", s: State{Replicas: 1, Limit: noLimit, NotReady: "not ready",
			Claims: []Claim{up("a", 0, 10), up("b", 1, 10)}},
			del: []string{"a"}},
		{name: "surplus: unlaunched first, then the fewest pods", s: State{Replicas: 1, Limit: noLimit,
			Claims: []Claim{up("busy", 5, 10), up("idle", 0, 10), launching("new"), up("some", 2, 10)}},
			del: []string{"new", "idle", "some"}},
		{name: "surplus with equal pods: the newest first", s: State{Replicas: 1, Limit: noLimit,
			Claims: []Claim{up("old", 1, 60), up("young", 1, 5)}},
			del: []string{"young"}},
		{name: "surplus: a drifted claim goes before a sound one", s: State{Replicas: 1, Limit: noLimit,
			Claims: []Claim{up("sound", 0, 10), drifted("drifted", 3, 10)}},
			del: []string{"drifted"}, replaced: true},
		{name: "a drifted claim gets a replacement first", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60), up("c", 1, 60)}},
			create: 1, replacements: 1},
		{name: "the drifted claim waits for its replacement to be Ready", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60), up("c", 1, 60), starting("r")}}},
		{name: "nor is a replacement not in the cache yet deleted", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60), up("c", 1, 60)}, Pending: 1}},
		{name: "the drifted claim is deleted once its replacement is Ready", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60), up("c", 1, 60), up("r", 0, 1)}},
			del: []string{"a"}, replaced: true},
		{name: "one drifted claim at a time under a budget of one", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), drifted("b", 2, 60), up("c", 1, 60)}},
			create: 1, replacements: 1, wait: "1 drifted claim(s) wait for the disruption budget"},
		{name: "after a deletion the next replacement waits for the budget", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), drifted("b", 2, 60), up("c", 1, 60), up("r", 0, 1)}},
			del: []string{"a"}, replaced: true, wait: "1 drifted claim(s) wait"},
		{name: "a budget of two replaces two at a time", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 2,
			Claims: []Claim{drifted("a", 1, 60), drifted("b", 2, 60), up("c", 1, 60)}},
			create: 2, replacements: 2},
		{name: "a budget of zero holds drift back", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 0,
			Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60), up("c", 1, 60)}},
			wait: "wait for the disruption budget for reason Drifted"},
		{name: "drift waits for room under limits.nodes", s: State{Replicas: 2, Limit: 2, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60)}},
			wait: "limits.nodes 2 leaves room for 0 more"},
		{name: "a drifted replacement is not created for a pool not ready", s: State{Replicas: 2, Limit: noLimit, DriftBudget: 1,
			NotReady: "it is not Ready", Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60)}},
			wait: "it is not Ready"},
		{name: "a lost claim and a drifted one: both made up", s: State{Replicas: 3, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 1, 60), up("b", 1, 60)}},
			create: 2, replacements: 1},
		{name: "an expired claim is replaced whatever the budget", s: State{Replicas: 2, Limit: noLimit, DriftBudget: 0,
			Claims: []Claim{expired("a", 1, 120), up("b", 1, 60)}},
			create: 1, replacements: 1},
		{name: "an expired claim with no room for a replacement is deleted first", s: State{Replicas: 2, Limit: 2,
			Claims: []Claim{expired("a", 1, 120), up("b", 1, 60)}},
			del: []string{"a"}, replaced: true, wait: "limits.nodes"},
		{name: "lowering replicas during drift removes drifted claims first", s: State{Replicas: 1, Limit: noLimit, DriftBudget: 1,
			Claims: []Claim{drifted("a", 0, 60), drifted("b", 1, 60), drifted("c", 2, 60)}},
			del: []string{"a", "b"}, replaced: true, wait: "1 drifted claim(s) wait"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.s)
			var del []string
			for _, x := range d.Delete {
				del = append(del, x.Name)
				if x.Replaced != tt.replaced {
					t.Errorf("deletion of %s: Replaced %v, want %v (%s)", x.Name, x.Replaced, tt.replaced, x.Why)
				}
			}
			if d.Create != tt.create || d.Replacements != tt.replacements || strings.Join(del, ",") != strings.Join(tt.del, ",") {
				t.Errorf("Decide: create %d (%d replacements), delete %v; want create %d (%d replacements), delete %v",
					d.Create, d.Replacements, del, tt.create, tt.replacements, tt.del)
			}
			if tt.wait == "" && d.Wait != "" || !strings.Contains(d.Wait, tt.wait) {
				t.Errorf("Wait %q; want %q", d.Wait, tt.wait)
			}
		})
	}
}
