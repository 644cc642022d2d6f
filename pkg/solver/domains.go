package solver

import (
	"slices"
	"strconv"
	"sync"
)

// derived are numbers and answers a solve derives from the problem once
// and then reads (buildKinds sets fits and sigOf). A state embeds it by
// value; forks share the memo.
type derived struct {
	// fits is how many distinct class.fit there are; sigOf numbers, per
	// group, its node constraints (see buildKinds).
	fits  int
	sigOf []int
	// domains remembers domainsOf's answers (nil: not remembered).
	domains *domainMemo
}

// domainMemo remembers findDomains' answers. They depend only on the
// problem and on what the pod asks of a node (node selector, affinity,
// tolerations, host ports) and its requests, which the pods of many groups
// share: a solve with hundreds of groups asks for each distinct answer once.
// The packing strategies run concurrently and share it, hence the lock.
type domainMemo struct {
	mu   sync.Mutex
	seen map[string][]string
	// offers remembers poolOffers per pool and pool labels; cells,
	// poolCells per pool, pool labels and keys.
	offers map[string][]offerRef
	cells  map[string]*offerCells
}

// domainsOf is findDomains, remembered per node constraints, requests, key
// and filter. Pods with node-affinity preferences (which findDomains reads
// through the pool labels it picks) are not remembered. The caller owns the
// returned slice.
func (s *state) domainsOf(pod *Pod, key string, f domainFilter) []string {
	if s.domains == nil || slices.ContainsFunc(pod.Preferences, func(p Preference) bool { return p.Kind == PreferNodeAffinity }) {
		return s.findDomains(pod, key, f)
	}
	k := domainsKey(pod, key, f)
	s.domains.mu.Lock()
	d, ok := s.domains.seen[k]
	s.domains.mu.Unlock()
	if !ok {
		d = s.findDomains(pod, key, f)
		s.domains.mu.Lock()
		s.domains.seen[k] = d
		s.domains.mu.Unlock()
	}
	return slices.Clone(d)
}

// domainsKey is domainsOf's memo key: the pod's node constraints and
// requests, the topology key and the filter.
func domainsKey(pod *Pod, key string, f domainFilter) string {
	nck := nodeConstraintKey(pod)
	b := strconv.AppendInt(nil, int64(len(nck)), 10)
	b = append(b, 0)
	b = append(b, nck...)
	for _, q := range pod.Requests {
		b = append(b, 0)
		b = strconv.AppendInt(b, q, 10)
	}
	b = append(b, 0)
	b = append(b, key...)
	for _, on := range []bool{f.taints, f.affinity, f.launchable, f.fits} {
		b = append(b, 0, '0')
		if on {
			b[len(b)-1] = '1'
		}
	}
	return string(b)
}
