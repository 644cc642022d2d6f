package explain

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestHeldAdviceIsTheAdvice: the advice's wider plans held ready while the
// plan is solved (holdAdvice) give the advice planning them afterwards
// gives, and when the advice is not planned (the plan took too long) or
// the run ends, the held solves stop instead of waiting for ever.
func TestHeldAdviceIsTheAdvice(t *testing.T) {
	in := mixNoPool(t, 300)
	built, solved := buildAndSolve(t, in)
	// The plan is taken to have taken maxAdvicePlan: each wider plan has
	// twice that, so that none is cut short on a loaded machine.
	want, err := newAdvice(context.Background(), in, built.Problem, solved, maxAdvicePlan, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.list) == 0 {
		t.Fatal("no advice on the mix: the test compares nothing")
	}
	tests := []struct {
		name string
		took time.Duration
		// cancel ends the run's context before the advice.
		cancel  bool
		want    *advice
		wantErr error
	}{
		{"planned: the same advice", maxAdvicePlan, false, want, nil},
		{"not planned: the plan took too long", maxAdvicePlan + time.Second, false, nil, nil},
		{"the run ended", maxAdvicePlan, true, nil, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			held := holdAdvice(ctx, in)
			if len(held.solves) != len(in.Default.Widenings(in.InstanceTypes)) {
				t.Fatalf("%d solves held, want one per widening", len(held.solves))
			}
			if tt.cancel {
				cancel()
			}
			got, err := newAdvice(ctx, in, built.Problem, solved, tt.took, time.Time{}, held)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("newAdvice: %v, want %v", err, tt.wantErr)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("held advice %+v, want %+v", got, tt.want)
			}
			if tt.want != nil {
				return // resumed: newAdvice took their plans
			}
			// Every held solve not resumed has stopped.
			for i, h := range held.solves {
				select {
				case <-h.solved:
				case <-time.After(10 * time.Second):
					t.Fatalf("held solve %d still running", i)
				}
			}
		})
	}
}
