package ec2test

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Instance states.
const (
	StateRunning    = "running"
	StateTerminated = "terminated"
)

// Instance is a launched instance.
type Instance struct {
	ID, Type, Zone, SubnetID, ImageID string
	Arch                              string
	CapacityType                      string
	State                             string
	LaunchTime                        time.Time
	Tags, VolumeTags                  map[string]string
	LaunchTemplateID                  string
	PrivateIP, PrivateDNSName         string
	ClientToken                       string
	// SecurityGroupIDs are the instance's security groups: its launch
	// template's.
	SecurityGroupIDs []string
	// CapacityReservationID is the capacity reservation the instance
	// runs in, and CapacityReservationPreference its launch template's
	// preference; empty outside any reservation.
	CapacityReservationID, CapacityReservationPreference string
}

// ProviderID is the instance's Kubernetes provider ID, aws:///zone/id.
func (i Instance) ProviderID() string { return "aws:///" + i.Zone + "/" + i.ID }

// Instances returns every instance, terminated ones included, in launch order.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Instance, 0, len(s.instanceOrder))
	for _, id := range s.instanceOrder {
		out = append(out, cloneInstance(s.instances[id]))
	}
	return out
}

// Running returns the instances not terminated.
func (s *Server) Running() []Instance {
	return slices.DeleteFunc(s.Instances(), func(i Instance) bool { return i.State == StateTerminated })
}

// LaunchInstance adds a running instance directly, as if launched by
// someone else (e.g. a leaked instance for garbage collection tests); one
// with a CapacityReservationID takes its place in that reservation, if
// it has one left.
func (s *Server) LaunchInstance(in Instance) Instance {
	s.mu.Lock()
	if r := s.reservation(in.CapacityReservationID); r != nil && r.Available > 0 {
		r.Available--
	}
	in = s.addInstance(in)
	hook := s.OnLaunch
	s.mu.Unlock()
	if hook != nil {
		hook(in)
	}
	return in
}

// Terminate terminates a running instance directly, as its owner, a spot
// interruption or a failed host would, and calls OnTerminate; it reports
// whether the instance was running.
func (s *Server) Terminate(id string) bool {
	s.mu.Lock()
	in := s.instances[id]
	if in == nil || in.State == StateTerminated {
		s.mu.Unlock()
		return false
	}
	in.State = StateTerminated
	s.release(in)
	c := cloneInstance(in)
	hook := s.OnTerminate
	s.mu.Unlock()
	if hook != nil {
		hook(c)
	}
	return true
}

func cloneInstance(i *Instance) Instance {
	c := *i
	c.Tags = maps.Clone(i.Tags)
	c.VolumeTags = maps.Clone(i.VolumeTags)
	c.SecurityGroupIDs = slices.Clone(i.SecurityGroupIDs)
	return c
}

// fleetCandidate is one override of a CreateFleet request.
type fleetCandidate struct {
	lt                       *LaunchTemplate
	version                  string
	typ, subnet, zone, image string
	priority                 float64
	order                    int
}

func (s *Server) createFleet(m meta, p params) (any, []Instance, error) {
	if t := p.get("Type"); t != "instant" {
		return nil, nil, badRequest("InvalidParameterValue", "this server only supports fleets of type instant, not %q", t)
	}
	tc := p.sub("TargetCapacitySpecification")
	total := tc.int("TotalTargetCapacity", 0)
	if total < 1 {
		return nil, nil, badRequest("InvalidParameterValue", "TotalTargetCapacity must be at least 1")
	}
	capacityType := tc.get("DefaultTargetCapacityType")
	if capacityType != OnDemand && capacityType != Spot && capacityType != CapacityBlock {
		return nil, nil, badRequest("InvalidParameterValue", "DefaultTargetCapacityType must be on-demand, spot or capacity-block, not %q", capacityType)
	}
	strategy := p.get("OnDemandOptions.AllocationStrategy")
	if capacityType == Spot {
		strategy = p.get("SpotOptions.AllocationStrategy")
	}
	cands, err := s.fleetCandidates(p)
	if err != nil {
		return nil, nil, err
	}
	s.sortFleetCandidates(cands, capacityType, strategy)
	instanceTags, volumeTags := fleetTags(cands[0].lt, p)

	s.seq++
	resp := createFleetXML{meta: m, FleetID: fmt.Sprintf("fleet-%08x-0000-0000-0000-000000000000", s.seq)}
	errs, insts, launched := s.launchFleet(p, cands, total, capacityType, instanceTags, volumeTags)
	resp.Errors = itemsOf(errs)
	resp.Instances = itemsOf(insts)
	return resp, launched, nil
}

// fleetCandidates reads a CreateFleet request's overrides, in the order
// given, each with its launch template and the zone of its subnet.
func (s *Server) fleetCandidates(p params) ([]fleetCandidate, error) {
	var cands []fleetCandidate
	for _, cfg := range p.structs("LaunchTemplateConfigs") {
		spec := cfg.sub("LaunchTemplateSpecification")
		var lt *LaunchTemplate
		for _, t := range s.templates {
			if (spec.get("LaunchTemplateId") != "" && t.ID == spec.get("LaunchTemplateId")) || (spec.get("LaunchTemplateName") != "" && t.Name == spec.get("LaunchTemplateName")) {
				lt = t
			}
		}
		if lt == nil {
			return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template does not exist.")
		}
		overrides := cfg.structs("Overrides")
		if len(overrides) == 0 {
			return nil, badRequest("InvalidParameterValue", "this server needs overrides with an instance type and subnet")
		}
		for _, o := range overrides {
			c := fleetCandidate{lt: lt, version: spec.get("Version"), typ: o.get("InstanceType"), subnet: o.get("SubnetId"),
				zone: o.get("AvailabilityZone"), image: cmp.Or(o.get("ImageId"), lt.Data.ImageID), order: len(cands)}
			if v, err := strconv.ParseFloat(o.get("Priority"), 64); err == nil {
				c.priority = v
			}
			if c.subnet != "" {
				i := slices.IndexFunc(s.subnets, func(sn Subnet) bool { return sn.ID == c.subnet })
				if i < 0 {
					return nil, badRequest("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", c.subnet)
				}
				c.zone = s.subnets[i].Zone
			}
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil, badRequest("InvalidParameterValue", "LaunchTemplateConfigs is required")
	}
	return cands, nil
}

// sortFleetCandidates orders the candidates as the allocation strategy
// tries them: by priority for the prioritized strategies, else by price
// (the latest spot price for spot, unknown types last); ties keep their
// order.
func (s *Server) sortFleetCandidates(cands []fleetCandidate, capacityType, strategy string) {
	price := func(c fleetCandidate) float64 {
		it := s.types[c.typ]
		if it == nil {
			return math.Inf(1)
		}
		if capacityType == Spot {
			if sp, ok := s.latestSpot(c.typ, c.zone); ok {
				return sp
			}
		}
		if it.OnDemandPrice > 0 {
			return it.OnDemandPrice
		}
		return math.Inf(1)
	}
	switch strategy {
	case "prioritized", "capacity-optimized-prioritized":
		slices.SortStableFunc(cands, func(a, b fleetCandidate) int { return cmp.Compare(a.priority, b.priority) })
	default: // lowest-price, price-capacity-optimized, capacity-optimized
		slices.SortStableFunc(cands, func(a, b fleetCandidate) int { return cmp.Compare(price(a), price(b)) })
	}
}

// fleetTags returns the tags of the instances and volumes a fleet launches
// from lt: the launch template's, overridden by the request's
// TagSpecifications.
func fleetTags(lt *LaunchTemplate, p params) (instanceTags, volumeTags map[string]string) {
	instanceTags = maps.Clone(lt.Data.TagSpecs["instance"])
	volumeTags = maps.Clone(lt.Data.TagSpecs["volume"])
	specs := p.tagSpecs("TagSpecification")
	if instanceTags == nil {
		instanceTags = map[string]string{}
	}
	maps.Copy(instanceTags, specs["instance"])
	if volumeTags == nil {
		volumeTags = map[string]string{}
	}
	maps.Copy(volumeTags, specs["volume"])
	return instanceTags, volumeTags
}

// fleetOverrides is the launch template and overrides of c, as a fleet
// response reports them.
func fleetOverrides(c fleetCandidate) fleetOverridesXML {
	var x fleetOverridesXML
	x.Spec.LaunchTemplateID = c.lt.ID
	x.Spec.Version = c.version
	x.Overrides.InstanceType = c.typ
	x.Overrides.SubnetID = c.subnet
	x.Overrides.AvailabilityZone = c.zone
	return x
}

// launchFleet launches up to total instances from the candidates in
// order, as many from each as it (and its capacity reservation) allows,
// and returns the errors for the candidates refused, the fleet's
// instances per candidate and the instances launched; s.mu must be held.
func (s *Server) launchFleet(p params, cands []fleetCandidate, total int, capacityType string, instanceTags, volumeTags map[string]string) (errs []fleetErrorXML, insts []fleetInstanceXML, launched []Instance) {
	for _, c := range cands {
		if len(launched) == total {
			break
		}
		it := s.types[c.typ]
		switch {
		case it == nil || !slices.Contains(it.Zones, c.zone):
			errs = append(errs, fleetErrorXML{LaunchTemplateAndOverrides: fleetOverrides(c), Lifecycle: capacityType, ErrorCode: "Unsupported",
				ErrorMessage: fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", c.typ, c.zone)})
			continue
		case capacityType == Spot && !it.Spot:
			errs = append(errs, fleetErrorXML{LaunchTemplateAndOverrides: fleetOverrides(c), Lifecycle: capacityType, ErrorCode: "UnsupportedOperation",
				ErrorMessage: fmt.Sprintf("The instance type %s does not support spot.", c.typ)})
			continue
		}
		if code, refused := s.refused[capacityKey{c.typ, c.zone, capacityType}]; refused {
			errs = append(errs, fleetErrorXML{LaunchTemplateAndOverrides: fleetOverrides(c), Lifecycle: capacityType, ErrorCode: code,
				ErrorMessage: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", c.typ, c.zone)})
			continue
		}
		r, code, msg := s.fleetReservation(c, capacityType)
		if code != "" {
			errs = append(errs, fleetErrorXML{LaunchTemplateAndOverrides: fleetOverrides(c), Lifecycle: capacityType, ErrorCode: code, ErrorMessage: msg})
			continue
		}
		var ids []string
		for len(launched) < total && (r == nil || r.Available > 0) {
			in := Instance{Type: c.typ, Zone: c.zone, SubnetID: c.subnet, ImageID: c.image, Arch: it.Arch, CapacityType: capacityType,
				Tags: maps.Clone(instanceTags), VolumeTags: maps.Clone(volumeTags), LaunchTemplateID: c.lt.ID, ClientToken: p.get("ClientToken"),
				SecurityGroupIDs: slices.Clone(c.lt.Data.SecurityGroupIDs)}
			if r != nil {
				r.Available--
				in.CapacityReservationID, in.CapacityReservationPreference = r.ID, c.lt.Data.CapacityReservationPreference
			}
			in = s.addInstance(in)
			launched = append(launched, in)
			ids = append(ids, in.ID)
		}
		if len(ids) > 0 {
			insts = append(insts, fleetInstanceXML{LaunchTemplateAndOverrides: fleetOverrides(c), Lifecycle: capacityType, InstanceIDs: itemsOf(ids), InstanceType: c.typ})
		}
	}
	return errs, insts, launched
}

// lifecycle is an instance's value of the instance-lifecycle filter:
// spot or capacity-block, none for on-demand.
func lifecycle(in *Instance) []string {
	if in.CapacityType == Spot || in.CapacityType == CapacityBlock {
		return []string{in.CapacityType}
	}
	return nil
}

// addInstance stores a new running instance; s.mu must be held.
func (s *Server) addInstance(in Instance) Instance {
	s.seq++
	if in.ID == "" {
		in.ID = fmt.Sprintf("i-%017x", s.seq)
	}
	in.State = StateRunning
	if in.LaunchTime.IsZero() {
		in.LaunchTime = s.now()
	}
	if in.CapacityType == "" {
		in.CapacityType = OnDemand
	}
	in.PrivateIP = fmt.Sprintf("10.0.%d.%d", (s.seq/250)%250, s.seq%250+1)
	in.PrivateDNSName = "ip-" + strings.ReplaceAll(in.PrivateIP, ".", "-") + "." + s.region + ".compute.internal"
	c := in
	s.instances[in.ID] = &c
	s.instanceOrder = append(s.instanceOrder, in.ID)
	return cloneInstance(&c)
}

var stateCodes = map[string]int{"pending": 0, StateRunning: 16, "shutting-down": 32, StateTerminated: 48, "stopping": 64, "stopped": 80}

func (s *Server) describeInstances(m meta, p params) (any, error) {
	ids := p.list("InstanceId")
	for _, id := range ids {
		if s.instances[id] == nil {
			return nil, badRequest("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	var all []reservationXML
	for _, id := range s.instanceOrder {
		in := s.instances[id]
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		if len(ids) == 0 && s.now().Sub(in.LaunchTime) < s.listLag {
			continue
		}
		ok, err := matchTagged(p.filters(), fields{
			"instance-id": {in.ID}, "instance-state-name": {in.State}, "instance-type": {in.Type}, "availability-zone": {in.Zone},
			"client-token": {in.ClientToken}, "instance-lifecycle": lifecycle(in),
		}, in.Tags)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		x := instanceXML{InstanceID: in.ID, ImageID: in.ImageID, State: stateXML{Code: stateCodes[in.State], Name: in.State}, PrivateDNSName: in.PrivateDNSName,
			InstanceType: in.Type, LaunchTime: timeXML(in.LaunchTime), SubnetID: in.SubnetID, VpcID: "vpc-1", PrivateIPAddress: in.PrivateIP,
			Architecture: in.Arch, ClientToken: in.ClientToken, Tags: tagsXML(in.Tags)}
		x.Placement.AvailabilityZone = in.Zone
		if len(in.SecurityGroupIDs) > 0 {
			groups := make([]groupXML, len(in.SecurityGroupIDs))
			for i, id := range in.SecurityGroupIDs {
				groups[i] = groupXML{ID: id}
				if j := slices.IndexFunc(s.groups, func(g SecurityGroup) bool { return g.ID == id }); j >= 0 {
					groups[i].Name = s.groups[j].Name
				}
			}
			x.Groups = itemsOf(groups)
		}
		switch in.CapacityType {
		case Spot:
			x.InstanceLifecycle = Spot
			x.SpotRequestID = "sir-" + strings.TrimPrefix(in.ID, "i-")
		case CapacityBlock:
			x.InstanceLifecycle = CapacityBlock
		}
		if in.CapacityReservationID != "" {
			x.CapacityReservationID = in.CapacityReservationID
			x.CapacityReservationSpec = &capacityReservationSpecXML{Preference: in.CapacityReservationPreference}
			x.CapacityReservationSpec.Target.ID = in.CapacityReservationID
		}
		all = append(all, reservationXML{ReservationID: "r-" + strings.TrimPrefix(in.ID, "i-"), OwnerID: "123456789012", Instances: itemsOf([]instanceXML{x})})
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeInstancesXML{meta: m, Reservations: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) terminateInstances(m meta, p params) (any, error) {
	ids := p.list("InstanceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter InstanceId")
	}
	for _, id := range ids {
		if s.instances[id] == nil {
			return nil, badRequest("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	var out []stateChangeXML
	for _, id := range ids {
		in := s.instances[id]
		prev := in.State
		in.State = StateTerminated
		if prev != StateTerminated {
			s.release(in)
			s.terminated = append(s.terminated, cloneInstance(in))
		}
		out = append(out, stateChangeXML{InstanceID: id, Previous: stateXML{Code: stateCodes[prev], Name: prev}, Current: stateXML{Code: 48, Name: StateTerminated}})
	}
	return terminateInstancesXML{meta: m, Instances: itemsOf(out)}, nil
}
