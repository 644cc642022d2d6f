package ec2test

import (
	"fmt"
	"slices"
	"strconv"
)

// CapacityReservation is an on-demand capacity reservation (ODCR) or a
// capacity block: Available of Total instances of one type in one zone
// are left to launch into.
type CapacityReservation struct {
	ID, OwnerID, InstanceType, Zone string
	Total, Available                int
	// State is "active" when empty.
	State string
	// MatchCriteria is "open" or "targeted" ("targeted" when empty).
	MatchCriteria string
	// Type is "default" (an ODCR) or "capacity-block" ("default" when
	// empty).
	Type string
	Tags map[string]string
}

// AddCapacityReservation adds a capacity reservation.
func (s *Server) AddCapacityReservation(r CapacityReservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.State == "" {
		r.State = "active"
	}
	if r.MatchCriteria == "" {
		r.MatchCriteria = "targeted"
	}
	if r.Type == "" {
		r.Type = "default"
	}
	s.reservations = append(s.reservations, &r)
}

// CapacityReservationAvailable returns how many instances reservation id
// has left, or -1 when there is no such reservation.
func (s *Server) CapacityReservationAvailable(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.reservation(id); r != nil {
		return r.Available
	}
	return -1
}

// reservation returns the reservation of id, or nil.
func (s *Server) reservation(id string) *CapacityReservation {
	i := slices.IndexFunc(s.reservations, func(r *CapacityReservation) bool { return r.ID == id })
	if i < 0 {
		return nil
	}
	return s.reservations[i]
}

// fleetReservation returns the capacity reservation a fleet override
// launches into (its launch template's target; nil for none), or the
// error code and message EC2 refuses the override with: a reservation of
// another type or zone, not active, of the wrong kind for the fleet's
// target capacity type, or full (ReservationCapacityExceeded, the code
// Karpenter's provider marks a reservation unavailable on). s.mu is held.
func (s *Server) fleetReservation(c fleetCandidate, capacityType string) (*CapacityReservation, string, string) {
	id := c.lt.Data.CapacityReservationID
	if id == "" || c.lt.Data.CapacityReservationPreference != "capacity-reservations-only" {
		if capacityType == CapacityBlock {
			return nil, "InvalidParameterCombination", "A capacity-block fleet needs launch templates that target a capacity block."
		}
		return nil, "", ""
	}
	r := s.reservation(id)
	switch {
	case r == nil:
		return nil, "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)
	case r.InstanceType != c.typ || r.Zone != c.zone:
		return nil, "InvalidParameterCombination", fmt.Sprintf("The instance type and Availability Zone (%s, %s) do not match those of capacity reservation %s (%s, %s).",
			c.typ, c.zone, id, r.InstanceType, r.Zone)
	case r.State != "active":
		return nil, "InvalidParameterValue", fmt.Sprintf("The capacity reservation %s is %s, not active.", id, r.State)
	case (r.Type == CapacityBlock) != (capacityType == CapacityBlock):
		return nil, "InvalidParameterCombination", fmt.Sprintf("Capacity reservation %s of type %s cannot be launched into with target capacity type %s.", id, r.Type, capacityType)
	case r.Available < 1:
		return nil, "ReservationCapacityExceeded", fmt.Sprintf("Insufficient capacity in capacity reservation %s: it has no instances left.", id)
	}
	return r, "", ""
}

// release gives a terminated instance's place back to its capacity
// reservation. s.mu is held.
func (s *Server) release(in *Instance) {
	if r := s.reservation(in.CapacityReservationID); r != nil && r.Available < r.Total {
		r.Available++
	}
}

func (s *Server) describeCapacityReservations(m meta, p params) (any, error) {
	ids := p.list("CapacityReservationId")
	for _, id := range ids {
		if s.reservation(id) == nil {
			return nil, badRequest("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
		}
	}
	var all []capacityReservationXML
	for _, r := range s.reservations {
		if len(ids) > 0 && !slices.Contains(ids, r.ID) {
			continue
		}
		ok, err := matchTagged(p.filters(), fields{
			"capacity-reservation-id": {r.ID}, "owner-id": {r.OwnerID}, "instance-type": {r.InstanceType}, "availability-zone": {r.Zone},
			"state": {r.State}, "instance-match-criteria": {r.MatchCriteria}, "reservation-type": {r.Type},
		}, r.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			all = append(all, capacityReservationXML{ID: r.ID, OwnerID: r.OwnerID, InstanceType: r.InstanceType, Platform: "Linux/UNIX",
				Zone: r.Zone, Tenancy: "default", Total: strconv.Itoa(r.Total), Available: strconv.Itoa(r.Available), State: r.State,
				MatchCriteria: r.MatchCriteria, Type: r.Type, Tags: tagsXML(r.Tags)})
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeCapacityReservationsXML{meta: m, Reservations: itemsOf(pg), NextToken: next}, nil
}

type describeCapacityReservationsXML struct {
	meta
	Reservations *items[capacityReservationXML] `xml:"capacityReservationSet"`
	NextToken    string                         `xml:"nextToken,omitempty"`
}

type capacityReservationXML struct {
	ID            string         `xml:"capacityReservationId"`
	OwnerID       string         `xml:"ownerId"`
	InstanceType  string         `xml:"instanceType"`
	Platform      string         `xml:"instancePlatform"`
	Zone          string         `xml:"availabilityZone"`
	Tenancy       string         `xml:"tenancy"`
	Total         string         `xml:"totalInstanceCount"`
	Available     string         `xml:"availableInstanceCount"`
	State         string         `xml:"state"`
	MatchCriteria string         `xml:"instanceMatchCriteria"`
	Type          string         `xml:"reservationType"`
	Tags          *items[tagXML] `xml:"tagSet"`
}
