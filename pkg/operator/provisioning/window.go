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
//
// Both ways of keeping a window open beyond its configured idle gap end
// hold after the window opened: the grown idle gap never carries the
// window past that point, and no incomplete workload holds it past it
// either. A ramp's first pods then wait for their nodes about as long as
// Karpenter's batching (1 s idle, 10 s at most) makes them wait, at the
// price of splitting a ramp longer than hold into several decisions;
// triggers that keep coming within the configured idle gap still keep it
// open, up to max.
type window struct {
	opened, last    time.Time
	longestGap      time.Duration
	idle, hold, max time.Duration
	// closed is when the window closed; heldBy names the last workload
	// that kept it open past its idle gap (see Provisioner.growing).
	closed time.Time
	heldBy string
}

// maxIdleFactor bounds how far the idle gap grows.
const maxIdleFactor = 4

func newWindow(now time.Time, idle, hold, max time.Duration) *window {
	return &window{opened: now, last: now, idle: idle, hold: hold, max: max}
}

// arrive records a trigger at now.
func (w *window) arrive(now time.Time) {
	if gap := now.Sub(w.last); gap > w.longestGap {
		w.longestGap = gap
	}
	w.last = now
}

// idleGap is how long the window waits for the next trigger, grown with
// the gaps between arrivals.
func (w *window) idleGap() time.Duration {
	return min(max(w.idle, 2*w.longestGap), maxIdleFactor*w.idle)
}

// holdEnds is when the window stops being kept open beyond its configured
// idle gap: hold after it opened, never past max.
func (w *window) holdEnds() time.Time {
	return w.opened.Add(min(w.hold, w.max))
}

// closesAt is when the window closes if no trigger comes before and no
// workload holds it.
func (w *window) closesAt() time.Time {
	closes := w.last.Add(w.idleGap())
	if end := w.holdEnds(); closes.After(end) {
		// The grown part of the gap stops at the end of the hold; the
		// configured gap does not.
		closes = later(w.last.Add(w.idle), end)
	}
	if limit := w.opened.Add(w.max); limit.Before(closes) {
		return limit
	}
	return closes
}

// next decides, at now, whether the window closes: once its idle gap has
// passed, it stays open only while growing (called then and only then)
// names a workload still creating pods, and the hold has not ended. When
// it stays open, wait is how long until next should be asked again.
func (w *window) next(now time.Time, growing func() string) (wait time.Duration, closes bool) {
	if c := w.closesAt(); now.Before(c) {
		return c.Sub(now), false
	}
	end := w.holdEnds()
	if !now.Before(end) {
		return 0, true
	}
	why := growing()
	if why == "" {
		return 0, true
	}
	w.heldBy = why
	return min(w.idle, end.Sub(now)), false
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
