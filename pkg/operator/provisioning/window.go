package provisioning

import "time"

// window is the batching window of one provisioning decision. It opens
// with the first trigger and closes once no trigger came for its idle gap,
// or once it has been open for max, whichever is first.
//
// The idle gap adapts to the arrivals of a workload's pods: it starts at
// the configured idle and grows to twice the longest gap seen before a
// trigger that brought a pod a controller owns, up to maxIdleFactor times
// the configured idle. Pods nothing owns (bare pods, as a trace replays
// them, arriving one by one) do not grow it: they keep Karpenter's 1 s
// idle gap, and each waits about that long rather than four times it. A ramp whose
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
//
// A window that arrivals keep open past its hold does not make every pod
// of it wait for its close: each hold it stays open, an early decision
// plans the pods so far and launches only the nodes the plan fills (see
// earlyFill); the pods of the other nodes, the ones more pods would fill
// better, stay for the next decision. The first pods of a long ramp then
// wait about a hold for their nodes, as with Karpenter's 10 s batches,
// while the ramp's tail is still planned with all of it.
type window struct {
	opened, last    time.Time
	longestGap      time.Duration
	idle, hold, max time.Duration
	// closed is when the window closed, or made its last early decision
	// (early is then true; the window stays open).
	closed time.Time
	early  bool
	// heldBy names the last workload that kept it open past its idle gap
	// (see Provisioner.growing).
	heldBy string
}

// maxIdleFactor bounds how far the idle gap grows.
const maxIdleFactor = 4

func newWindow(now time.Time, idle, hold, max time.Duration) *window {
	return &window{opened: now, last: now, idle: idle, hold: hold, max: max}
}

// arrive records a trigger at now; grows says whether it brought a pod a
// workload owns, whose gap since the last trigger grows the idle gap.
func (w *window) arrive(now time.Time, grows bool) {
	if gap := now.Sub(w.last); grows && gap > w.longestGap {
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

// earlyAt is when the window, if still open, makes an early decision: a
// hold after it opened or after its last early decision; never when the
// hold is within the idle gap or reaches max.
func (w *window) earlyAt() time.Time {
	if w.hold <= w.idle || w.hold >= w.max {
		return time.Time{}
	}
	from := w.opened
	if w.early {
		from = w.closed
	}
	return from.Add(w.hold)
}

// wakeAt is when the window's timer should next fire: when it closes, or
// its early decision if that is before.
func (w *window) wakeAt() time.Time {
	at := w.closesAt()
	if e := w.earlyAt(); !e.IsZero() && e.Before(at) {
		return e
	}
	return at
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

// decision is what the batching loop does when the window's timer fires.
type decision int

const (
	waitMore decision = iota
	closeWindow
	decideEarly
)

// decide is next with early decisions: the window closes as next says;
// while it stays open, it decides early once earlyAt has come, and the
// timer is set no later than that.
func (w *window) decide(now time.Time, growing func() string) (time.Duration, decision) {
	wait, closes := w.next(now, growing)
	if closes {
		return 0, closeWindow
	}
	if e := w.earlyAt(); !e.IsZero() {
		if !now.Before(e) {
			return 0, decideEarly
		}
		wait = min(wait, e.Sub(now))
	}
	return wait, waitMore
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
