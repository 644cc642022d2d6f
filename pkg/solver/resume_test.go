package solver_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestResumeHoldsTheSolve: a solve held at Options.Resume plans, once
// resumed, exactly what a solve given the Resume's packing from the start
// plans, and a held solve that is cancelled, or whose Resume closes
// without a value, returns an error wrapping context.Canceled.
func TestResumeHoldsTheSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 4))
	p := &Problem{Pods: tracePods(rng, 300, 6), Pools: []Pool{widenedPool([]string{"amd64"}, []string{"on-demand"})}, InstanceTypes: append(testTypes(), armTypes(rng)...)}
	full, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	wide := *p
	wide.Pools = []Pool{widenedPool([]string{"amd64", "arm64"}, []string{"on-demand"})}
	wide.Options.NoNarrowing = true
	direct := wide
	direct.Options.Packing = full.Packing()
	want, err := Solve(&direct)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// resume is run beside the held solve, with its Resume and Done.
		resume   func(resume chan<- Resume, cancel chan<- struct{})
		canceled bool
	}{
		{"resumed with the packing", func(resume chan<- Resume, _ chan<- struct{}) {
			resume <- Resume{Packing: full.Packing()}
		}, false},
		{"resumed after a while, with a deadline far off", func(resume chan<- Resume, _ chan<- struct{}) {
			time.Sleep(20 * time.Millisecond)
			resume <- Resume{Packing: full.Packing(), Deadline: time.Now().Add(time.Hour)}
		}, false},
		{"cancelled while held", func(_ chan<- Resume, cancel chan<- struct{}) {
			close(cancel)
		}, true},
		{"Resume closed without a value", func(resume chan<- Resume, _ chan<- struct{}) {
			close(resume)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held := wide
			resume, cancel := make(chan Resume), make(chan struct{})
			held.Options.Resume, held.Options.Done = resume, cancel
			go tt.resume(resume, cancel)
			got, err := Solve(&held)
			if tt.canceled {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Solve = %v, %v; want an error wrapping context.Canceled", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			if string(a) != string(b) {
				t.Errorf("the resumed solve planned $%v/h (%d unplaced), the solve packed so from the start $%v/h (%d)", got.TotalPrice, len(got.Unschedulable), want.TotalPrice, len(want.Unschedulable))
			}
			if held.Options.Resume == nil || held.Options.Packing != (Packing{}) {
				t.Error("Solve changed the caller's options")
			}
		})
	}
}
