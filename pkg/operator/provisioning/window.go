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
// the last; a lone pod still waits only the configured idle.
//
// Past its idle gap, the window stays open while pods are still to come
// and their count keeps falling (see extend): a Deployment's ramp whose
// ReplicaSet controller, or a scheduler, pauses longer than the gap between
// two of its bursts is still one decision.
type window struct {
	opened, last time.Time
	longestGap   time.Duration
	idle, max    time.Duration
	// toCome is the lowest count of pods still to come seen at an
	// extension (-1 before any), fell when it last fell; extensions counts
	// the extensions.
	toCome, extensions int
	fell               time.Time
}

// maxStallFactor bounds, in idle gaps, how long pods still to come may stop
// coming before the window closes without them.
const maxStallFactor = 10

// maxIdleFactor bounds how far the idle gap grows.
const maxIdleFactor = 4

func newWindow(now time.Time, idle, max time.Duration) *window {
	return &window{opened: now, last: now, idle: idle, max: max, toCome: -1, fell: now}
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

// extend keeps the window open for another idle gap from now when, at the
// end of its idle gap, toCome pods are still to come and their count fell
// to a new low within the last maxStallFactor idle gaps: the pods are on
// their way, slowly maybe (a controller or scheduler of a loaded control
// plane pauses for seconds). A count that stopped falling (a ReplicaSet its
// quota holds back, a pod of another scheduler) or only wavers (pods coming
// and going in a busy cluster) holds the window no longer than that, and
// max bounds it as ever. It reports whether the window was extended.
func (w *window) extend(now time.Time, toCome int) bool {
	if toCome <= 0 || !now.Before(w.opened.Add(w.max)) {
		return false
	}
	if w.toCome < 0 || toCome < w.toCome {
		w.toCome, w.fell = toCome, now
	}
	if now.Sub(w.fell) >= maxStallFactor*w.idle {
		return false
	}
	w.last = now
	w.extensions++
	return true
}
