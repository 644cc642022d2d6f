package provisioning

import (
	"testing"
	"time"
)

// TestWindowClosesAt checks when a window closes given its arrivals (each
// an offset from its opening), with a 1 s idle gap, a 90 s max and the
// hold of each case.
func TestWindowClosesAt(t *testing.T) {
	steady := func(every, until time.Duration) []time.Duration {
		var out []time.Duration
		for d := every; d < until; d += every {
			out = append(out, d)
		}
		return out
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// slow is a ramp paused 1.5 s between its arrivals, after a first
	// 0.9 s gap that grows the idle gap enough to take the pauses.
	var slow []time.Duration
	for d := ms(900); d < 200*time.Second; d += ms(1500) {
		slow = append(slow, d)
	}
	tests := []struct {
		name     string
		hold     time.Duration
		arrivals []time.Duration
		bare     bool          // the arrivals are pods no workload owns
		want     time.Duration // when the window closes, from its opening
	}{
		{name: "a lone pod waits the idle gap", hold: 90 * time.Second, want: time.Second},
		{name: "a burst closes one idle gap after its last pod", hold: 90 * time.Second, arrivals: []time.Duration{ms(100), ms(200)}, want: ms(1200)},
		{name: "a pause longer than the idle gap closes the window", hold: 90 * time.Second, arrivals: []time.Duration{ms(1500)}, want: time.Second},
		{name: "pauses grow the idle gap to twice the longest", hold: 90 * time.Second, arrivals: []time.Duration{ms(900), ms(2500)}, want: ms(5700)},
		{name: "pauses between bare pods do not grow the idle gap", hold: 90 * time.Second, arrivals: []time.Duration{ms(900), ms(1800), ms(2700), ms(4000)}, bare: true, want: ms(3700)},
		{name: "the idle gap grows to 4× at most", hold: 90 * time.Second, arrivals: []time.Duration{ms(900), ms(2600), ms(5800)}, want: ms(9800)},
		{name: "a steady ramp is bounded by max", hold: 90 * time.Second, arrivals: steady(ms(500), 200*time.Second), want: 90 * time.Second},
		{name: "the grown gap stops at the end of the hold", hold: 5 * time.Second, arrivals: []time.Duration{ms(900), ms(2500)}, want: 5 * time.Second},
		{name: "the grown gap does not reopen a window past its hold", hold: 5 * time.Second, arrivals: []time.Duration{ms(900), ms(2600), ms(4900)}, want: ms(5900)},
		{name: "pauses of a slow ramp no longer stretch it past the hold", hold: 10 * time.Second, arrivals: slow, want: ms(10900)},
		{name: "without a hold, pauses of a slow ramp stretch it to max", hold: 90 * time.Second, arrivals: slow, want: 90 * time.Second},
		{name: "arrivals within the configured idle gap keep it open past the hold", hold: 10 * time.Second, arrivals: steady(ms(500), 20*time.Second), want: ms(20500)},
		{name: "the hold never outlasts max", hold: 200 * time.Second, arrivals: slow, want: 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(0, 0)
			w := newWindow(t0, time.Second, tt.hold, 90*time.Second)
			for _, d := range tt.arrivals {
				if t0.Add(d).After(w.closesAt()) {
					break // closed before this arrival
				}
				w.arrive(t0.Add(d), !tt.bare)
			}
			if got := w.closesAt().Sub(t0); got != tt.want {
				t.Errorf("closes after %s, want %s", got, tt.want)
			}
		})
	}
}

// TestWindowNext checks the decision taken when the window's timer fires:
// wait while the idle gap runs, then stay open only while a workload is
// incomplete and the hold lasts, asking the workloads only then.
func TestWindowNext(t *testing.T) {
	tests := []struct {
		name      string
		hold      time.Duration
		at        time.Duration // when next is asked, from the opening
		growing   string
		wantWait  time.Duration
		wantClose bool
		wantAsked bool
	}{
		{name: "before the idle gap passed it waits for the rest of it", hold: 10 * time.Second, at: 400 * time.Millisecond, growing: "rs", wantWait: 600 * time.Millisecond},
		{name: "complete workloads close it after the idle gap", hold: 10 * time.Second, at: time.Second, wantClose: true, wantAsked: true},
		{name: "an incomplete workload holds it another idle gap", hold: 10 * time.Second, at: time.Second, growing: "rs", wantWait: time.Second, wantAsked: true},
		{name: "the last recheck stops at the end of the hold", hold: 10 * time.Second, at: 9500 * time.Millisecond, growing: "rs", wantWait: 500 * time.Millisecond, wantAsked: true},
		{name: "at the end of the hold it closes without asking", hold: 10 * time.Second, at: 10 * time.Second, growing: "rs", wantClose: true},
		{name: "a hold past max ends at max", hold: 5 * time.Minute, at: 90 * time.Second, growing: "rs", wantClose: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(0, 0)
			w := newWindow(t0, time.Second, tt.hold, 90*time.Second)
			asked := false
			wait, closes := w.next(t0.Add(tt.at), func() string { asked = true; return tt.growing })
			if wait != tt.wantWait || closes != tt.wantClose || asked != tt.wantAsked {
				t.Errorf("next = (%s, closes %v), workloads asked %v; want (%s, closes %v), asked %v", wait, closes, asked, tt.wantWait, tt.wantClose, tt.wantAsked)
			}
			if tt.wantAsked && tt.growing != "" && w.heldBy != tt.growing {
				t.Errorf("heldBy = %q, want %q", w.heldBy, tt.growing)
			}
		})
	}
}
