// Package state holds what the operator's controllers learn at run time and
// share: offerings the cloud recently had no capacity for.
package state

import (
	"sync"
	"time"
)

// DefaultUnavailableTTL is how long an offering that failed with
// insufficient capacity is left out of plans (Karpenter's is 3 minutes).
const DefaultUnavailableTTL = 3 * time.Minute

// Unavailable remembers offerings (instance type, zone, capacity type) that
// failed to launch for lack of capacity, so that the next plans avoid them
// for a while. It is safe for concurrent use.
type Unavailable struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	until map[string]time.Time
}

// NewUnavailable returns an empty set whose entries expire after ttl.
func NewUnavailable(ttl time.Duration) *Unavailable {
	if ttl <= 0 {
		ttl = DefaultUnavailableTTL
	}
	return &Unavailable{ttl: ttl, now: time.Now, until: map[string]time.Time{}}
}

func key(instanceType, zone, capacityType string) string {
	return instanceType + "/" + zone + "/" + capacityType
}

// MarkOffering records "type/zone/capacity-type" (the form of
// cloud.InsufficientCapacityError.Offerings) as unavailable.
func (u *Unavailable) MarkOffering(offering string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[offering] = u.now().Add(u.ttl)
}

// Has reports whether the offering is currently unavailable.
func (u *Unavailable) Has(instanceType, zone, capacityType string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := key(instanceType, zone, capacityType)
	t, ok := u.until[k]
	if ok && u.now().After(t) {
		delete(u.until, k)
		return false
	}
	return ok
}
