package provisioning

import "time"

// window is the batching window of one provisioning decision. It opens
// with the first trigger and closes once no trigger came for its idle gap,
// or once it has been open for max, whichever is first.
//
// The idle gap adapts to the arrivals: it starts at the configured idle
// and grows to twice the longest gap seen between two triggers of the
// window, up to maxIdleFactor times the configured idle. A ramp whose
// controller pauses between its bursts (the ReplicaSet controller's slow
// start, a rate-limited client) stays one window, one decision over all
// its pods, instead of a decision per burst, each planned as if it were
// the last; a lone pod still waits only the configured idle. Past its idle
// gap, the window also stays open while a workload of its pods still
// creates them (Provisioner.await, growing): a pause of that workload's
// controller longer than any idle gap does not split its ramp either.
type window struct {
	opened, last time.Time
	longestGap   time.Duration
	idle, max    time.Duration
	// closed is when the window closed; heldBy names the last workload
	// that kept it open past its idle gap (see Provisioner.growing).
	closed time.Time
	heldBy string
}

// maxIdleFactor bounds how far the idle gap grows.
const maxIdleFactor = 4

func newWindow(now time.Time, idle, max time.Duration) *window {
	return &window{opened: now, last: now, idle: idle, max: max}
}

// arrive records a trigger at now.
func (w *window) arrive(now time.Time) {
	if gap := now.Sub(w.last); gap > w.longestGap {
		w.longestGap = gap
	}
	w.last = now
}

// idleGap is how long the window waits for the next trigger.
func (w *window) idleGap() time.Duration {
	return min(max(w.idle, 2*w.longestGap), maxIdleFactor*w.idle)
}

// closesAt is when the window closes if no trigger comes before.
func (w *window) closesAt() time.Time {
	closes := w.last.Add(w.idleGap())
	if limit := w.opened.Add(w.max); limit.Before(closes) {
		return limit
	}
	return closes
}
