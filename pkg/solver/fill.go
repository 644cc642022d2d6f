package solver

import (
	"math"
	"slices"
)

// filler is the scratch space and counters of filling one node
// (fillBalanced, capRoom, the greedy's remembered fills). A state embeds
// it by value: a fork gets its own (see fork).
type filler struct {
	// cursors is scratch space for fillBalanced.
	cursors []bucketCursor
	// nearLast is scratch space for fillBalanced: true for the classes
	// that conflict with the class its last batch took.
	nearLast []bool
	// needs is fillBalanced's answer beside its takes: per take, the
	// fewest pods left of its class for which it takes the same.
	needs []int
	// lastCaps is, while a node is filled, the capMask of the class the
	// last batch took (see bucketCursor).
	lastCaps uint64
	// taken counts, while a node is filled, its pods per class;
	// capCount and capCarrier the pods counted by each cap group
	// (state.caps) and its carriers.
	taken, capCount, capCarrier []int
	// fills counts the nodes the greedy compared kinds by, filled or
	// remembered (see fillMemo).
	fills int
	// refill makes the greedy fill every kind's node anew after each
	// launch, as before fillMemo: the reference of the tests that check
	// remembered fills.
	refill bool
}

// shapeBucket is a set of a kind's candidate classes with the same requests
// and value: fillBalanced scores them alike, so it scores the bucket once
// per batch instead of every class in it. Classes differ by constraints far
// more often than by requests (a spread selector, a zone share), so a kind
// has a few dozen buckets where it has thousands of classes.
type shapeBucket struct {
	req   Resources
	shape classShape
	// density is the classes' value per share (value / shape.max), the
	// weight of a weighted fill's score.
	density float64
	// members are positions in the kind's order, ascending: the first
	// member that can take pods is the one the old per-class scan found
	// first among equal scores.
	members []int32
}

// bucketCursor is fillBalanced's progress through one bucket while it fills
// one node: members before at cannot take pods on this node (nor will they
// for the rest of it); checked says the member at at was already checked
// for conflicts with every class on the node but the last one taken.
//
// A checked cursor also keeps what firstTaker found for that member, so
// that the next batch need not look it up again: its class, its position
// in the kind's order, and left, how many more pods of it the node may
// take. Every batch visits every cursor still live, so left goes stale
// only when the batch before took the class itself (then that batch's
// class is the class) or a class that counts in one of its cap groups
// (capMask).
type bucketCursor struct {
	bucket, at int32
	class, pos int32
	caps       uint64 // capMask of the class
	left       int32
	checked    bool
}

// bucketKey is what classes of one bucket share.
type bucketKey struct {
	req   Resources
	value float64
}

// bucketsOf numbers the classes by what a bucket's classes share
// (bucketKey), as a map keyed by it would tell them apart.
func bucketsOf(classes []*class) []int32 {
	ids := map[bucketKey]int32{}
	out := make([]int32, len(classes))
	for ci, c := range classes {
		kk := bucketKey{c.req, c.value}
		id, ok := ids[kk]
		if !ok {
			id = int32(len(ids))
			ids[kk] = id
		}
		out[ci] = id
	}
	return out
}

// shapeBuckets groups the kind's fill order into buckets, in the order of
// their first member. Classes that request nothing the kind has are left
// out: they never add value to a node. bucketOf numbers the classes
// (bucketsOf); slot is scratch space, one entry per number, each -1.
//
// A bucket's classes have the same requests, so its shape on the kind
// (shapeOf) is worked out once, for its first member, and a class left
// out leaves out its whole bucket.
func (k *kind) shapeBuckets(classes []*class, bucketOf, slot []int32) []shapeBucket {
	var out []shapeBucket
	var none []int32 // numbers of buckets left out
	for i, ci := range k.order {
		id := bucketOf[ci]
		b := slot[id]
		if b == noShape {
			continue
		}
		if b < 0 {
			c := classes[ci]
			sh := k.shapeOf(&c.req)
			if sh.max == 0 {
				slot[id] = noShape
				none = append(none, id)
				continue
			}
			b = int32(len(out))
			slot[id] = b
			out = append(out, shapeBucket{req: c.req, shape: sh, density: c.value / sh.max})
		}
		out[b].members = append(out[b].members, int32(i))
	}
	for _, b := range out {
		slot[bucketOf[k.order[b.members[0]]]] = -1
	}
	for _, id := range none {
		slot[id] = -1
	}
	return out
}

// noShape marks, in shapeBuckets' slots, a bucket left out.
const noShape = -2

// shapeOf is req relative to the kind's allocatable: its requests as
// shares of alloc, their Euclidean length and the largest share.
func (k *kind) shapeOf(req *Resources) classShape {
	var sh classShape
	for r, q := range req {
		if k.alloc[r] > 0 {
			sh.norm[r] = float64(q) / float64(k.alloc[r])
			sh.length += sh.norm[r] * sh.norm[r]
			sh.max = max(sh.max, sh.norm[r])
		}
	}
	sh.length = math.Sqrt(sh.length)
	return sh
}

// fillDims is 1 + the last resource the kind allocates or one of its
// buckets requests. Past it free room, requests and shares are all zero,
// so that fillBalanced's fit test and scores need not look there: a
// kind's resources are a few of MaxResources (CPU, memory, storage, pods).
func (k *kind) fillDims() int {
	dims := 0
	for r := range k.alloc {
		if k.alloc[r] > 0 {
			dims = r + 1
		}
		for i := range k.buckets {
			if k.buckets[i].req[r] > 0 {
				dims = r + 1
			}
		}
	}
	return dims
}

// fitsWithin is req.Fits(free) on the first dims resources.
func fitsWithin(req, free *Resources, dims int) bool {
	for r := range dims {
		if req[r] > free[r] {
			return false
		}
	}
	return true
}

// fillBalanced packs one node of kind k a batch at a time, each time taking
// the class whose requests best match the shape of what is still free (the
// cosine of normalised request and free vectors, times the class's value per
// share when weighted), so that CPU-heavy and memory-heavy pods share nodes
// instead of each exhausting one resource while the other idles. Among
// equal scores the class first in k's fill order wins. It returns what it
// took and the value of it, without changing the state (it only forgets,
// for good, classes with no pods left).
//
// It scores buckets of classes with equal requests and value (see
// shapeBucket), each by its first member that can still take pods, so a
// batch costs the number of buckets, not of classes. A class that does not
// fit, conflicts, is capped or has no pods left stays so for the rest of
// the node (free room, room under caps and pods left only shrink, conflicts
// only grow), so each bucket's cursor only moves forward and each batch
// scans only the buckets that survived the last.
//
// It leaves in s.needs, per take, the fewest pods left of its class for
// which the fill would take the same (see fillMemo).
func (s *state) fillBalanced(k *kind, weights []int32, takes []take, weighted bool) ([]take, float64) {
	free := k.alloc
	value := 0.0
	poolWeight := s.p.Pools[k.pool].Weight
	start := len(takes)
	if len(s.taken) != len(s.classes) {
		s.taken = make([]int, len(s.classes))
	}
	s.needs = s.needs[:0]
	s.lastCaps = 0
	live := s.cursors[:0]
	for b := range k.buckets {
		live = append(live, bucketCursor{bucket: int32(b)})
	}
	if len(s.nearLast) != len(s.classes) {
		s.nearLast = make([]bool, len(s.classes))
	}
	// last is the class the last batch took; nearLast marks the classes
	// it conflicts with (conflicts are symmetric), so that each bucket
	// asks a slice, not a search of its class's conflicts, every batch.
	last := -1
	markNear := func(on bool) {
		if last >= 0 {
			for _, cj := range s.classes[last].conflicts {
				s.nearLast[cj] = on
			}
		}
	}
	defer func() {
		markNear(false)
		s.resetCaps(takes[start:])
		for _, t := range takes[start:] {
			s.taken[t.class] = 0
		}
		s.cursors = live[:0]
	}()
	for {
		var f Resources64 // free room as shares of alloc
		fn := 0.0
		for r := range k.dims {
			if k.alloc[r] > 0 {
				f[r] = float64(free[r]) / float64(k.alloc[r])
				fn += f[r] * f[r]
			}
		}
		fn = math.Sqrt(fn)
		if fn == 0 {
			break
		}
		bestClass, bestScore, bestLeft, bestPos := -1, 0.0, 0, int32(0)
		kept := 0
		for i := range live {
			cur := &live[i]
			b := &k.buckets[cur.bucket]
			if !fitsWithin(&b.req, &free, k.dims) {
				continue
			}
			ci, left := s.firstTaker(k, b, cur, weights, poolWeight, takes[start:], last)
			if ci < 0 {
				continue
			}
			if kept < i {
				live[kept] = *cur
			}
			kept++
			sh := &b.shape
			dot := 0.0
			for r := range k.dims {
				dot += sh.norm[r] * f[r]
			}
			score := dot / (sh.length * fn)
			if weighted {
				score *= b.density
			}
			if score > bestScore || (bestClass >= 0 && score == bestScore && cur.pos < bestPos) {
				bestClass, bestScore, bestLeft, bestPos = ci, score, left, cur.pos
			}
		}
		live = live[:kept]
		if bestClass < 0 {
			break
		}
		if bestClass != last {
			markNear(false)
			last = bestClass
			markNear(true)
		}
		c := s.classes[bestClass]
		fit := fitCount(free, c.req)
		// The batch takes the same while the class has at least need
		// pods left (see fillMemo).
		need := min(s.rem[bestClass], s.taken[bestClass]+min(fit, s.capRoom(bestClass)))
		n := min(fit, bestLeft)
		n = (n + 1) / 2
		free = free.Sub(c.req.Scale(int64(n)))
		value += float64(n) * c.value
		s.countCap(bestClass, n)
		s.lastCaps = capMask(c)
		s.taken[bestClass] += n
		found := false
		for i := start; i < len(takes); i++ {
			if takes[i].class == bestClass {
				takes[i].n += n
				s.needs[i-start] = max(s.needs[i-start], need)
				found = true
			}
		}
		if !found {
			takes = append(takes, take{bestClass, n})
			s.needs = append(s.needs, need)
		}
	}
	// Later batches saw each taken class as taking while it had pods
	// beyond those taken.
	for i, t := range takes[start:] {
		s.needs[i] = max(s.needs[i], min(s.rem[t.class], t.n+1))
	}
	return takes, value
}

// fillMemo is a kind's last balanced fill, which the greedy reuses while
// nothing the fill depends on has changed, instead of filling the kind's
// node again after every launch: a launch takes pods of a few classes,
// and most kinds' fills took none of them.
//
// Without pool limits (which change the pools' weights and room as nodes
// launch), a fill depends on the pods left per class only through the
// classes it took. A class it did not take was never the best of a batch,
// and a batch's best stays the best when another candidate has fewer
// pods left or none (a class with pods left takes up to all of them, so
// how many it has left does not change its score); every batch then frees
// and counts the same. A class it took takes the same in every batch
// while it has at least need pods left: then each batch that took it
// still finds as many left to take, and each later batch still finds some
// left (or, when need is all it had, finds the same as before).
type fillMemo struct {
	valid bool
	takes []take
	need  []int // per take
	value float64
}

// holds reports whether the remembered fill is still what filling the
// kind's node would take, given the pods left per class.
func (m *fillMemo) holds(rem []int) bool {
	if !m.valid {
		return false
	}
	for i, t := range m.takes {
		if rem[t.class] < m.need[i] {
			return false
		}
	}
	return true
}

// remember keeps a fill and its needs (fillBalanced's s.needs).
func (m *fillMemo) remember(takes []take, need []int, value float64) {
	m.valid, m.value = true, value
	m.takes = append(m.takes[:0], takes...)
	m.need = append(m.need[:0], need...)
}

// firstTaker moves the cursor to the bucket's first member that can take
// pods on the node being filled and returns that class and how many more
// pods of it the node may take; -1 when no member can. Members with no pods
// left leave the bucket for good.
func (s *state) firstTaker(k *kind, b *shapeBucket, cur *bucketCursor, weights []int32, poolWeight int32, onNode []take, last int) (int, int) {
	if cur.checked && int(cur.class) != last && cur.caps&s.lastCaps == 0 {
		// The member's answer holds unless it conflicts with the last take.
		if last < 0 || !s.nearLast[cur.class] {
			return int(cur.class), int(cur.left)
		}
		cur.at++
		cur.checked = false
	}
	for int(cur.at) < len(b.members) {
		pos := b.members[cur.at]
		ci := k.order[pos]
		if s.rem[ci] == 0 {
			b.members = slices.Delete(b.members, int(cur.at), int(cur.at)+1)
			cur.checked = false
			continue
		}
		if weights[ci] == poolWeight {
			var conflicts bool
			switch {
			case !cur.checked:
				conflicts = s.conflictsWith(ci, onNode)
			case last >= 0:
				conflicts = s.nearLast[ci]
			}
			if !conflicts {
				cur.checked = true
				if left := min(s.rem[ci]-s.taken[ci], s.capRoom(ci)); left > 0 {
					*cur = bucketCursor{bucket: cur.bucket, at: cur.at, class: int32(ci), pos: pos, left: int32(left),
						caps: capMask(s.classes[ci]), checked: true}
					return ci, left
				}
			}
		}
		cur.at++
		cur.checked = false
	}
	return -1, 0
}
