package ec2test

import (
	"slices"
	"strconv"
	"time"
)

// ReservedInstances is a purchase of EC2 Reserved Instances, as
// DescribeReservedInstances returns it: Count instances of InstanceType,
// regional (Zone empty, scope Region) or zonal.
type ReservedInstances struct {
	ID, InstanceType string
	// Zone makes the reservation zonal (scope "Availability Zone").
	Zone  string
	Count int
	// State is "active" when empty.
	State string
	// OfferingClass is "standard" (when empty) or "convertible".
	OfferingClass string
	// OfferingType is "No Upfront" when empty.
	OfferingType string
	// FixedPrice is the upfront fee in dollars; UsagePrice and Hourly are
	// charged an hour (Hourly as a recurring charge, as EC2 lists it for
	// the current offering types).
	FixedPrice, UsagePrice, Hourly float64
	// Duration is the term (one year when zero).
	Duration time.Duration
	Start    time.Time
	Tags     map[string]string
}

// AddReservedInstances adds a purchase of Reserved Instances.
func (s *Server) AddReservedInstances(r ReservedInstances) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.State == "" {
		r.State = "active"
	}
	if r.OfferingClass == "" {
		r.OfferingClass = "standard"
	}
	if r.OfferingType == "" {
		r.OfferingType = "No Upfront"
	}
	if r.Duration == 0 {
		r.Duration = 365 * 24 * time.Hour
	}
	s.reservedInstances = append(s.reservedInstances, &r)
}

func (s *Server) describeReservedInstances(m meta, p params) (any, error) {
	ids := p.list("ReservedInstancesId")
	var all []reservedInstancesXML
	for _, r := range s.reservedInstances {
		if len(ids) > 0 && !slices.Contains(ids, r.ID) {
			continue
		}
		scope := "Region"
		if r.Zone != "" {
			scope = "Availability Zone"
		}
		ok, err := matchTagged(p.filters(), fields{
			"reserved-instances-id": {r.ID}, "instance-type": {r.InstanceType}, "availability-zone": {r.Zone}, "scope": {scope},
			"state": {r.State}, "product-description": {"Linux/UNIX"}, "duration": {strconv.FormatInt(int64(r.Duration/time.Second), 10)},
		}, r.Tags)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		x := reservedInstancesXML{ID: r.ID, InstanceType: r.InstanceType, Zone: r.Zone, Scope: scope, Count: strconv.Itoa(r.Count),
			State: r.State, OfferingClass: r.OfferingClass, OfferingType: r.OfferingType, ProductDescription: "Linux/UNIX",
			Tenancy: "default", CurrencyCode: "USD", Duration: strconv.FormatInt(int64(r.Duration/time.Second), 10),
			FixedPrice: strconv.FormatFloat(r.FixedPrice, 'f', -1, 64), UsagePrice: strconv.FormatFloat(r.UsagePrice, 'f', -1, 64),
			Start: r.Start.UTC().Format(time.RFC3339), End: r.Start.Add(r.Duration).UTC().Format(time.RFC3339), Tags: tagsXML(r.Tags)}
		if r.Hourly > 0 {
			x.RecurringCharges = itemsOf([]recurringChargeXML{{Amount: strconv.FormatFloat(r.Hourly, 'f', -1, 64), Frequency: "Hourly"}})
		}
		all = append(all, x)
	}
	// DescribeReservedInstances is not paginated.
	return describeReservedInstancesXML{meta: m, Reserved: itemsOf(all)}, nil
}

type describeReservedInstancesXML struct {
	meta
	Reserved *items[reservedInstancesXML] `xml:"reservedInstancesSet"`
}

type reservedInstancesXML struct {
	ID                 string                     `xml:"reservedInstancesId"`
	InstanceType       string                     `xml:"instanceType"`
	Zone               string                     `xml:"availabilityZone,omitempty"`
	Scope              string                     `xml:"scope"`
	Count              string                     `xml:"instanceCount"`
	State              string                     `xml:"state"`
	OfferingClass      string                     `xml:"offeringClass"`
	OfferingType       string                     `xml:"offeringType"`
	ProductDescription string                     `xml:"productDescription"`
	Tenancy            string                     `xml:"instanceTenancy"`
	CurrencyCode       string                     `xml:"currencyCode"`
	Duration           string                     `xml:"duration"`
	FixedPrice         string                     `xml:"fixedPrice"`
	UsagePrice         string                     `xml:"usagePrice"`
	Start              string                     `xml:"start"`
	End                string                     `xml:"end"`
	RecurringCharges   *items[recurringChargeXML] `xml:"recurringCharges"`
	Tags               *items[tagXML]             `xml:"tagSet"`
}

type recurringChargeXML struct {
	Amount    string `xml:"amount"`
	Frequency string `xml:"frequency"`
}
