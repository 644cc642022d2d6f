package ec2test

import (
	"cmp"
	"maps"
	"slices"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// InstanceType is an instance type the server offers.
type InstanceType struct {
	Name            string
	VCPUs           int
	MemoryMiB       int64
	Arch            string // x86_64 or arm64
	MaxENIs         int
	IPv4PerENI      int
	GPUs            int
	GPUName         string
	GPUManufacturer string
	// Spot says whether the type can be bought as spot.
	Spot bool
	// Zones are the zones offering the type.
	Zones []string
	// OnDemandPrice is the type's Linux on-demand price in USD per hour, as
	// GetProducts reports it and Fleet's lowest-price strategy orders by.
	OnDemandPrice float64
}

// AddInstanceType adds or replaces an instance type.
func (s *Server) AddInstanceType(it InstanceType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := it
	c.Zones = slices.Clone(it.Zones)
	s.types[it.Name] = &c
}

// AddCatalog adds instance types from catalog data (as catalog.InstanceTypes
// returns them): shape, zones, on-demand price, and a spot price history
// entry per zone with a spot offering.
func (s *Server) AddCatalog(types []cloud.InstanceType) {
	for _, ct := range types {
		it := InstanceType{
			Name: ct.Name, VCPUs: int(ct.CPU / 1000), MemoryMiB: ct.Memory >> 20, Arch: "x86_64",
			MaxENIs: ct.MaxENIs, IPv4PerENI: ct.IPv4PerENI, GPUs: int(ct.GPU), GPUName: ct.GPUName, GPUManufacturer: ct.GPUManufacturer,
		}
		if ct.Architecture == "arm64" {
			it.Arch = "arm64"
		}
		for _, o := range ct.Offerings {
			if !slices.Contains(it.Zones, o.Zone) {
				it.Zones = append(it.Zones, o.Zone)
			}
			switch o.CapacityType {
			case cloud.CapacityTypeOnDemand:
				it.OnDemandPrice = o.Price
			case cloud.CapacityTypeSpot:
				it.Spot = true
				s.SetSpotPrice(ct.Name, o.Zone, o.Price)
			}
		}
		s.AddInstanceType(it)
	}
}

func (s *Server) describeInstanceTypes(m meta, p params) (any, error) {
	want := p.list("InstanceType")
	var all []instanceTypeXML
	for _, name := range slices.Sorted(maps.Keys(s.types)) {
		it := s.types[name]
		if len(want) > 0 && !slices.Contains(want, name) {
			continue
		}
		ok, err := matchFields(p.filters(), fields{
			"instance-type": {name}, "processor-info.supported-architecture": {it.Arch}, "supported-usage-class": usageClasses(it),
			"current-generation": {"true"},
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		x := instanceTypeXML{InstanceType: name, CurrentGeneration: true}
		x.VCPU.DefaultVCpus = it.VCPUs
		x.Memory.SizeInMiB = it.MemoryMiB
		x.Processor.Architectures = itemsOf([]string{it.Arch})
		if it.GPUs > 0 {
			x.GPU = &gpuInfoXML{GPUs: itemsOf([]gpuXML{{Count: it.GPUs, Name: it.GPUName, Manufacturer: it.GPUManufacturer}})}
		}
		x.Network.MaxENIs = it.MaxENIs
		x.Network.IPv4PerENI = it.IPv4PerENI
		x.UsageClasses = itemsOf(usageClasses(it))
		all = append(all, x)
	}
	for _, name := range want {
		if s.types[name] == nil {
			return nil, badRequest("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", name)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypesXML{meta: m, InstanceTypes: itemsOf(pg), NextToken: next}, nil
}

func usageClasses(it *InstanceType) []string {
	if it.Spot {
		return []string{OnDemand, Spot}
	}
	return []string{OnDemand}
}

func (s *Server) describeInstanceTypeOfferings(m meta, p params) (any, error) {
	lt := cmp.Or(p.get("LocationType"), "region")
	var all []offeringXML
	for _, name := range slices.Sorted(maps.Keys(s.types)) {
		it := s.types[name]
		var locations []string
		switch lt {
		case "region":
			locations = []string{s.region}
		case "availability-zone":
			locations = slices.Sorted(slices.Values(it.Zones))
		case "availability-zone-id":
			return nil, badRequest("InvalidParameterValue", "location type availability-zone-id is not supported by this server")
		default:
			return nil, badRequest("InvalidParameterValue", "Invalid location type: %s", lt)
		}
		for _, loc := range locations {
			ok, err := matchFields(p.filters(), fields{"instance-type": {name}, "location": {loc}})
			if err != nil {
				return nil, err
			}
			if ok {
				all = append(all, offeringXML{InstanceType: name, LocationType: lt, Location: loc})
			}
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypeOfferingsXML{meta: m, Offerings: itemsOf(pg), NextToken: next}, nil
}
