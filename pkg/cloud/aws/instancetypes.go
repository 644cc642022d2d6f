package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// seedFromCatalog loads the embedded snapshot's types, zones and prices for
// the region: what the provider plans with until the APIs answer.
func (p *Provider) seedFromCatalog() {
	types, err := p.catalog.InstanceTypes(p.region)
	if err != nil {
		p.log.Info("the embedded catalog does not know this region; instance types and prices come from the APIs only", "reason", err.Error())
		return
	}
	od := map[string]float64{}
	spot := map[string]map[string]float64{}
	for _, it := range types {
		for _, o := range it.Offerings {
			switch o.CapacityType {
			case cloud.CapacityTypeOnDemand:
				od[it.Name] = o.Price
			case cloud.CapacityTypeSpot:
				if spot[it.Name] == nil {
					spot[it.Name] = map[string]float64{}
				}
				spot[it.Name][o.Zone] = o.Price
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.odPrices, p.spotPrices = od, spot
	p.regionZones = p.catalog.Zones(p.region)
}

// RefreshInstanceTypes reads the instance types (DescribeInstanceTypes) and
// the zones offering them (DescribeInstanceTypeOfferings). On failure the
// previous data stays.
func (p *Provider) RefreshInstanceTypes(ctx context.Context) error {
	types, zones, err := p.describeInstanceTypes(ctx)
	if err != nil {
		p.metrics.refreshFailures.WithLabelValues("types").Inc()
		p.log.Error(err, "refreshing instance types failed; keeping the last good list")
		return fmt.Errorf("refreshing instance types: %w", err)
	}
	regionZones := map[string]bool{}
	for _, zs := range zones {
		for _, z := range zs {
			regionZones[z] = true
		}
	}
	now := p.opts.Now()
	p.mu.Lock()
	p.apiTypes, p.apiZones, p.typesAt = types, zones, now
	p.regionZones = slices.Sorted(maps.Keys(regionZones))
	p.mu.Unlock()
	p.metrics.lastRefresh.WithLabelValues("types").Set(float64(now.Unix()))
	p.log.V(1).Info("refreshed instance types", "types", len(types), "offered", len(zones))
	return nil
}

func (p *Provider) describeInstanceTypes(ctx context.Context) (map[string]cloud.InstanceType, map[string][]string, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	types := map[string]cloud.InstanceType{}
	pages := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("DescribeInstanceTypes: %w", err)
		}
		for _, info := range out.InstanceTypes {
			if it, ok := p.fromEC2(info); ok {
				types[it.Name] = it
			}
		}
	}
	zones := map[string][]string{}
	offers := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000),
	})
	for offers.HasMorePages() {
		out, err := offers.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("DescribeInstanceTypeOfferings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			name := string(o.InstanceType)
			if _, ok := types[name]; ok {
				zones[name] = append(zones[name], aws.ToString(o.Location))
			}
		}
	}
	for name := range zones {
		slices.Sort(zones[name])
	}
	return types, zones, nil
}

// spotSupported is the capacity type of the placeholder offering fromEC2
// gives a type sold as spot; allInstanceTypes replaces it with priced
// offerings per zone.
const spotSupported = "spot-supported"

// fromEC2 converts DescribeInstanceTypes' answer, filling what it lacks
// from the embedded catalog.
func (p *Provider) fromEC2(info ec2types.InstanceTypeInfo) (cloud.InstanceType, bool) {
	it := cloud.InstanceType{Name: string(info.InstanceType)}
	if info.VCpuInfo == nil || info.MemoryInfo == nil || info.ProcessorInfo == nil {
		return it, false
	}
	it.CPU = int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus)) * 1000
	it.Memory = aws.ToInt64(info.MemoryInfo.SizeInMiB) << 20
	for _, a := range info.ProcessorInfo.SupportedArchitectures {
		switch a {
		case ec2types.ArchitectureTypeArm64:
			it.Architecture = "arm64"
		case ec2types.ArchitectureTypeX8664:
			if it.Architecture == "" {
				it.Architecture = "amd64"
			}
		}
	}
	if it.Architecture == "" || it.CPU == 0 || it.Memory == 0 {
		return it, false // i386-only, Mac hosts and the like
	}
	if info.GpuInfo != nil {
		for _, g := range info.GpuInfo.Gpus {
			it.GPU += int64(aws.ToInt32(g.Count))
			it.GPUName = strings.ToLower(aws.ToString(g.Name))
			it.GPUManufacturer = strings.ToLower(aws.ToString(g.Manufacturer))
		}
	}
	if info.NetworkInfo != nil {
		it.MaxENIs = int(aws.ToInt32(info.NetworkInfo.MaximumNetworkInterfaces))
		it.IPv4PerENI = int(aws.ToInt32(info.NetworkInfo.Ipv4AddressesPerInterface))
	}
	if c, ok := p.catalog.Lookup(it.Name); ok {
		if it.MaxENIs == 0 {
			it.MaxENIs, it.IPv4PerENI = c.MaxENIs, c.IPv4PerENI
		}
		if it.GPU > 0 && it.GPUName == "" {
			it.GPUName, it.GPUManufacturer = c.GPUName, c.GPUManufacturer
		}
	}
	if slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeSpot) {
		// Remember spot support in an offering placeholder; priced later.
		it.Offerings = []cloud.Offering{{CapacityType: spotSupported}}
	}
	return it, true
}

// allInstanceTypes returns every type on sale in the region with its
// current offerings and prices, without the offerings marked unavailable.
// Types without any price are left out: nothing can be planned with them.
func (p *Provider) allInstanceTypes() []cloud.InstanceType { return p.instanceTypes(false) }

func (p *Provider) instanceTypes(withUnavailable bool) []cloud.InstanceType {
	p.mu.RLock()
	defer p.mu.RUnlock()
	type shape struct {
		it    cloud.InstanceType
		zones []string
		spot  bool
	}
	var shapes []shape
	if p.apiTypes != nil {
		for name, zones := range p.apiZones {
			it := p.apiTypes[name]
			spot := len(it.Offerings) > 0
			it.Offerings = nil
			shapes = append(shapes, shape{it, zones, spot})
		}
	} else if types, err := p.catalog.InstanceTypes(p.region); err == nil {
		for _, it := range types {
			var zones []string
			spot := false
			for _, o := range it.Offerings {
				if !slices.Contains(zones, o.Zone) {
					zones = append(zones, o.Zone)
				}
				spot = spot || o.CapacityType == cloud.CapacityTypeSpot
			}
			it.Offerings = nil
			shapes = append(shapes, shape{it, zones, spot})
		}
	}
	out := make([]cloud.InstanceType, 0, len(shapes))
	for _, s := range shapes {
		it := s.it
		od := p.odPrices[it.Name]
		spotByZone := p.spotPrices[it.Name]
		for _, z := range s.zones {
			if od > 0 && (withUnavailable || !p.unavailable.IsUnavailable(it.Name, z, cloud.CapacityTypeOnDemand)) {
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.CapacityTypeOnDemand, Price: od})
			}
			if !s.spot {
				continue
			}
			price, ok := spotByZone[z]
			if !ok {
				price = regionalSpot(spotByZone) // a zone the snapshot did not list
			}
			if price > 0 && (withUnavailable || !p.unavailable.IsUnavailable(it.Name, z, cloud.CapacityTypeSpot)) {
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.CapacityTypeSpot, Price: price})
			}
		}
		if len(it.Offerings) > 0 {
			cloud.PriceSustained(&it) // a planned node runs at its full CPU
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b cloud.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// regionalSpot is the highest known zone price: a cautious stand-in for a
// zone without its own history.
func regionalSpot(byZone map[string]float64) float64 {
	var hi float64
	for _, v := range byZone {
		hi = max(hi, v)
	}
	return hi
}

// InstanceTypes implements cloud.CloudProvider: the region's instance types
// with offerings in the zones of the pool's EC2NodeClass subnets, for the
// architectures of its images, at current prices, without the offerings
// recently refused for lack of capacity; and, when the class has
// capacityReservationSelectorTerms, an offering of capacity type reserved
// (counted, priced near zero) for each reservation they select with
// instances left, as Karpenter offers them (no terms, no reserved
// offerings).
func (p *Provider) InstanceTypes(ctx context.Context, pool *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	types := p.allInstanceTypes()
	if pool == nil || p.opts.NodeClasses == nil {
		return types, nil
	}
	ref := pool.Spec.Template.Spec.NodeClassRef
	if ref.Kind != "" && ref.Kind != "EC2NodeClass" {
		return nil, fmt.Errorf("aws: NodePool %s refers to a %s; the aws provider launches only with EC2NodeClasses", pool.Name, ref.Kind)
	}
	rc, err := p.resolvedClass(ctx, ref.Name)
	if err != nil {
		return nil, err
	}
	kubelet, err := cloud.NewKubelet(rc.spec.Kubelet)
	if err != nil {
		return nil, &cloud.NodeClassNotReadyError{NodeClass: ref.Name, Reason: err.Error()}
	}
	zones := map[string]bool{}
	for _, s := range rc.status.Subnets {
		zones[s.Zone] = true
	}
	rs, err := p.reservations(ctx, rc.spec.CapacityReservationSelectorTerms)
	if err != nil {
		return nil, fmt.Errorf("aws: EC2NodeClass %s's capacity reservations: %w", ref.Name, err)
	}
	reserved := reservedOfferings(rs)
	archs := rc.architectures()
	out := types[:0]
	for _, it := range types {
		if len(archs) > 0 && !archs[it.Architecture] {
			continue
		}
		it.Offerings = slices.DeleteFunc(it.Offerings, func(o cloud.Offering) bool { return !zones[o.Zone] })
		addReserved(&it, reserved[it.Name], zones)
		it.Kubelet = kubelet
		if len(it.Offerings) > 0 {
			out = append(out, it)
		}
	}
	return out, nil
}
