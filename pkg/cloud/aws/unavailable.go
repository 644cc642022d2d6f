package aws

import (
	"sync"
	"time"
)

// UnavailableOfferings remembers offerings (instance type × zone × capacity
// type) that EC2 recently refused, so that plans avoid them until the entry
// expires. It is safe for concurrent use.
type UnavailableOfferings struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[offeringKey]time.Time // → expiry
}

// offeringKey is an offering, or (reservation set, the rest empty) a
// capacity reservation.
type offeringKey struct{ instanceType, zone, capacityType, reservation string }

// NewUnavailableOfferings returns an empty cache whose entries last ttl.
func NewUnavailableOfferings(ttl time.Duration, now func() time.Time) *UnavailableOfferings {
	if now == nil {
		now = time.Now
	}
	return &UnavailableOfferings{ttl: ttl, now: now, entries: map[offeringKey]time.Time{}}
}

// MarkUnavailable records that the offering cannot be launched now.
func (u *UnavailableOfferings) MarkUnavailable(instanceType, zone, capacityType string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries[offeringKey{instanceType: instanceType, zone: zone, capacityType: capacityType}] = u.now().Add(u.ttl)
}

// IsUnavailable reports whether the offering was refused less than the TTL ago.
func (u *UnavailableOfferings) IsUnavailable(instanceType, zone, capacityType string) bool {
	return u.has(offeringKey{instanceType: instanceType, zone: zone, capacityType: capacityType})
}

// MarkReservationUnavailable records that capacity reservation id refused
// a launch (full, as Karpenter's provider marks one on
// ReservationCapacityExceeded): it is not offered until the entry
// expires, even where DescribeCapacityReservations still counts
// instances left.
func (u *UnavailableOfferings) MarkReservationUnavailable(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries[offeringKey{reservation: id}] = u.now().Add(u.ttl)
}

// IsReservationUnavailable reports whether capacity reservation id
// refused a launch less than the TTL ago.
func (u *UnavailableOfferings) IsReservationUnavailable(id string) bool {
	return u.has(offeringKey{reservation: id})
}

func (u *UnavailableOfferings) has(k offeringKey) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	exp, ok := u.entries[k]
	if !ok {
		return false
	}
	if !u.now().Before(exp) {
		delete(u.entries, k)
		return false
	}
	return true
}

// Len returns the number of offerings currently unavailable.
func (u *UnavailableOfferings) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	n := 0
	for k, exp := range u.entries {
		if now.Before(exp) {
			n++
		} else {
			delete(u.entries, k)
		}
	}
	return n
}
