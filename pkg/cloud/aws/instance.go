package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// capacityErrors are the fleet error codes that say an offering cannot be
// launched now; the offering is avoided for UnavailableFor.
var capacityErrors = map[string]bool{
	"InsufficientInstanceCapacity":         true,
	"InsufficientCapacity":                 true,
	"InsufficientHostCapacity":             true,
	"InsufficientReservedInstanceCapacity": true,
	"MaxSpotInstanceCountExceeded":         true,
	"VcpuLimitExceeded":                    true,
	"UnfulfillableCapacity":                true,
	"Unsupported":                          true,
	"SpotMaxPriceTooLow":                   true,
	"InsufficientFreeAddressesInSubnet":    true,
	// A full capacity reservation (Karpenter marks the reservation
	// unavailable on it).
	"ReservationCapacityExceeded": true,
}

// candidate is one offering a NodeClaim may launch on.
type candidate struct {
	it       *cloud.InstanceType
	offering cloud.Offering
	subnet   string
	image    image
	maxPods  int64
	// reservationType is a reserved offering's reservation type
	// (ReservationTypeDefault or ReservationTypeCapacityBlock).
	reservationType string
}

// instanceLabelKeys are the requirement keys the instance itself decides;
// requirements on other keys are met by the pool's labels, not the type.
func instanceLabelKey(key string) bool {
	switch key {
	case corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1alpha1.LabelCapacityType, cloud.LabelArch, cloud.LabelOS, cloud.LabelRegion:
		return true
	}
	return strings.HasPrefix(key, "karpenter.k8s.aws/")
}

func requestsOf(claim *v1alpha1.NodeClaim) solver.Resources {
	var r solver.Resources
	for i, name := range solver.FixedResourceNames {
		if q, ok := claim.Spec.Resources.Requests[corev1.ResourceName(name)]; ok {
			if i == solver.CPU {
				r[i] = q.MilliValue()
			} else {
				r[i] = q.Value()
			}
		}
	}
	return r
}

// candidates returns the offerings that satisfy the claim, cheapest first,
// in the zones of the class's subnets, for architectures it has images for,
// the reserved offerings of the reservations given among them.
func (p *Provider) candidates(claim *v1alpha1.NodeClaim, rc *resolvedClass, model cloud.NodeModel, reservations []reservation) []candidate {
	var reqs []solver.Requirement
	for _, r := range claim.Spec.Requirements {
		if instanceLabelKey(r.Key) {
			reqs = append(reqs, solver.Requirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values})
		}
	}
	want := requestsOf(claim)
	subnetByZone := map[string]string{}
	for _, s := range rc.status.Subnets {
		cur, ok := subnetByZone[s.Zone]
		if !ok || p.subnetFreeIPs(s.ID) > p.subnetFreeIPs(cur) {
			subnetByZone[s.Zone] = s.ID
		}
	}
	types := p.allInstanceTypes()
	// The class's kubelet settings size the nodes (Create has checked
	// that they read).
	kubelet, _ := cloud.NewKubelet(rc.spec.Kubelet)
	reserved := reservedOfferings(reservations)
	zones := map[string]bool{}
	for z := range subnetByZone {
		zones[z] = true
	}
	kindOf := map[string]string{}
	for _, r := range reservations {
		kindOf[r.id] = r.kind
	}
	var out []candidate
	for i := range types {
		it := &types[i]
		it.Kubelet = kubelet
		addReserved(it, reserved[it.Name], zones)
		im, ok := rc.imageFor(it.Architecture)
		if !ok && len(rc.images) > 0 {
			continue
		}
		st := model.SolverType(it, p.region)
		if !want.Fits(st.Capacity.Sub(st.Overhead)) {
			continue
		}
		labels := cloud.Labels(it, p.region)
		for _, o := range it.Offerings {
			subnet, ok := subnetByZone[o.Zone]
			if !ok {
				continue
			}
			labels[corev1.LabelTopologyZone] = o.Zone
			labels[v1alpha1.LabelCapacityType] = o.CapacityType
			delete(labels, LabelCapacityReservationID)
			delete(labels, LabelCapacityReservationType)
			if o.ReservationID != "" {
				labels[LabelCapacityReservationID], labels[LabelCapacityReservationType] = o.ReservationID, kindOf[o.ReservationID]
			}
			if !allMatch(reqs, labels) {
				continue
			}
			out = append(out, candidate{it: it, offering: o, subnet: subnet, image: im, maxPods: model.Pods(it), reservationType: kindOf[o.ReservationID]})
		}
	}
	slices.SortStableFunc(out, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.offering.Price, b.offering.Price), strings.Compare(a.it.Name, b.it.Name), strings.Compare(a.offering.Zone, b.offering.Zone))
	})
	return out
}

// cheapestTypes keeps the candidates (sorted by price) of the n instance
// types whose cheapest candidate is cheapest, every zone of each, as
// Karpenter truncates a launch's instance types before it makes one
// override per type and zone (aws/karpenter-provider-aws
// pkg/providers/instance/instance.go, maxInstanceTypes, getOverrides).
func cheapestTypes(cands []candidate, n int) []candidate {
	var kept []string
	return slices.DeleteFunc(cands, func(c candidate) bool {
		if slices.Contains(kept, c.it.Name) {
			return false
		}
		if len(kept) == n {
			return true
		}
		kept = append(kept, c.it.Name)
		return false
	})
}

func allMatch(reqs []solver.Requirement, labels map[string]string) bool {
	for i := range reqs {
		if !reqs[i].Matches(solver.MapLabels(labels)) {
			return false
		}
	}
	return true
}

// Create implements cloud.CloudProvider with one CreateFleet (type instant)
// per NodeClaim: into a capacity reservation when the claim allows
// capacity type reserved and a reservation its EC2NodeClass selects has
// room (Karpenter's order: reserved, spot, on-demand), else spot when the
// claim allows it and spot is on offer, else on-demand. A reserved launch
// targets, per type and zone, the reservation with the most room through
// a launch template of its own (capacity-reservations-only), as
// Karpenter's provider launches; a full reservation
// (ReservationCapacityExceeded) is marked unavailable and the claim's
// error is an InsufficientCapacityError, so its pods are planned again
// without it. One override per type and zone the claim allows, for its 60
// cheapest compatible types (a flexible claim lists every type that holds
// its pods); lowest-price for on-demand, price-capacity-optimized for spot
// (EC2 chooses, so an offering refused for capacity falls through to the
// next in the same call);
// the ClientToken is the claim's UID, so a retried call launches nothing
// new. Offerings the fleet refuses for capacity are marked unavailable.
func (p *Provider) Create(ctx context.Context, claim *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error) {
	rc, err := p.resolvedClass(ctx, claim.Spec.NodeClassRef.Name)
	if err != nil {
		return nil, err
	}
	if existing, err := p.findByClaim(ctx, claim.Name); err != nil {
		return nil, err
	} else if existing != nil {
		p.log.Info("instance already launched for the NodeClaim", "nodeClaim", claim.Name, "instance", aws.ToString(existing.InstanceId))
		return p.claimView(claim, existing, p.typeIndex()), nil
	}
	bds := blockDevices(rc.family, rc.spec.BlockDeviceMappings)
	if _, err := cloud.NewKubelet(rc.spec.Kubelet); err != nil {
		return nil, &cloud.NodeClassNotReadyError{NodeClass: rc.name, Reason: err.Error()}
	}
	model := p.opts.NodeModel
	if root := rootVolumeBytes(bds); root > 0 {
		model.EphemeralStorage = root
	}
	var reservations []reservation
	if claimAllows(claim, v1alpha1.LabelCapacityType, cloud.CapacityTypeReserved) {
		if reservations, err = p.reservations(ctx, rc.spec.CapacityReservationSelectorTerms); err != nil {
			return nil, fmt.Errorf("aws: EC2NodeClass %s's capacity reservations: %w", rc.name, err)
		}
	}
	cands := p.candidates(claim, rc, model, reservations)
	if len(cands) == 0 {
		return nil, &cloud.InsufficientCapacityError{Err: fmt.Errorf("no offering of %s satisfies the NodeClaim's requirements and requests in the zones of EC2NodeClass %s", p.region, rc.name)}
	}
	capacityType, cands, prioritized := launchOrder(claim, cands)
	cands = cheapestTypes(cands, maxInstanceTypes)
	configs, err := p.fleetConfigs(ctx, claim, rc, bds, cands)
	if err != nil {
		return nil, err
	}
	tags := p.instanceTags(claim, rc)
	in := fleetInput(claim, capacityType, prioritized, configs, cands, tags)
	callCtx, cancel := p.call(ctx)
	out, err := p.ec2.CreateFleet(callCtx, in)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("CreateFleet for NodeClaim %s: %w", claim.Name, err)
	}
	refused := p.recordFleetErrors(claim, capacityType, out.Errors, cands)
	return p.launched(claim, rc, model, capacityType, cands, tags, out, refused)
}

// launchOrder picks the claim's capacity type among the candidates
// (Karpenter's order: reserved, then spot, then on-demand), keeps the
// candidates of that type (for reserved, each type and zone's reservation
// with the most room), and orders them as an overlay-priced claim lists its
// types and zones; prioritized reports that order applies.
func launchOrder(claim *v1alpha1.NodeClaim, cands []candidate) (string, []candidate, bool) {
	capacityType := cloud.CapacityTypeOnDemand
	for _, ct := range []string{cloud.CapacityTypeReserved, cloud.CapacityTypeSpot} {
		if slices.ContainsFunc(cands, func(c candidate) bool { return c.offering.CapacityType == ct }) {
			capacityType = ct
			break
		}
	}
	cands = slices.DeleteFunc(cands, func(c candidate) bool { return c.offering.CapacityType != capacityType })
	if capacityType == cloud.CapacityTypeReserved {
		cands = reservedLaunch(cands)
	}
	prioritized := claim.Annotations[cloud.AnnotationPriceOverlayApplied] == "true"
	if prioritized {
		// Prices a NodeOverlay set, which EC2 does not know, ordered the
		// claim's types: EC2 takes them in that order.
		slices.SortStableFunc(cands, func(a, b candidate) int {
			return cmp.Or(cmp.Compare(claim.ListedAt(corev1.LabelInstanceTypeStable, a.it.Name), claim.ListedAt(corev1.LabelInstanceTypeStable, b.it.Name)),
				cmp.Compare(claim.ListedAt(corev1.LabelTopologyZone, a.offering.Zone), claim.ListedAt(corev1.LabelTopologyZone, b.offering.Zone)))
		})
	}
	return capacityType, cands, prioritized
}

// fleetInput builds the instant CreateFleet request for one instance of
// the claim: its launch template configurations, tags on the instance and
// its volumes, the allocation strategies for the capacity type and the
// claim's UID as the ClientToken.
func fleetInput(claim *v1alpha1.NodeClaim, capacityType string, prioritized bool, configs []ec2types.FleetLaunchTemplateConfigRequest, cands []candidate, tags map[string]string) *ec2.CreateFleetInput {
	ec2Tags := make([]ec2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		ec2Tags = append(ec2Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: fleetTargetCapacityType(capacityType, cands[0].reservationType),
		},
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		SpotOptions:     &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2Tags},
		},
	}
	if prioritized {
		// As Karpenter's provider launches a claim an overlay priced
		// (pkg/providers/instance/types.go, CreateFleetInputBuilder.Build).
		in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
		in.SpotOptions.AllocationStrategy = ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized
	}
	if in.TargetCapacitySpecification.DefaultTargetCapacityType == ec2types.DefaultTargetCapacityTypeCapacityBlock {
		in.OnDemandOptions = nil // capacity blocks take no allocation strategy
	}
	if claim.UID != "" {
		in.ClientToken = aws.String(string(claim.UID))
	}
	return in
}

// launched returns the claim as launched from the first instance the
// fleet reports, or the error for a fleet that launched none: an
// InsufficientCapacityError when offerings were refused for capacity.
func (p *Provider) launched(claim *v1alpha1.NodeClaim, rc *resolvedClass, model cloud.NodeModel, capacityType string, cands []candidate, tags map[string]string, out *ec2.CreateFleetOutput, refused []string) (*v1alpha1.NodeClaim, error) {
	for _, fi := range out.Instances {
		if len(fi.InstanceIds) == 0 {
			continue
		}
		id := fi.InstanceIds[0]
		typ := string(fi.InstanceType)
		zone := ""
		if lo := fi.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
			zone = aws.ToString(lo.Overrides.AvailabilityZone)
			if typ == "" {
				typ = string(lo.Overrides.InstanceType)
			}
			if zone == "" {
				zone = zoneOfSubnet(rc, aws.ToString(lo.Overrides.SubnetId))
			}
		}
		i := slices.IndexFunc(cands, func(c candidate) bool { return c.it.Name == typ && c.offering.Zone == zone })
		if i < 0 {
			return nil, fmt.Errorf("CreateFleet for NodeClaim %s launched %s in %s, which it was not asked for", claim.Name, typ, zone)
		}
		c := cands[i]
		p.metrics.launches.WithLabelValues(capacityType).Inc()
		p.log.Info("launched instance", "nodeClaim", claim.Name, "instance", id, "instanceType", typ, "zone", zone,
			"capacityType", capacityType, "pricePerHour", c.offering.Price, "overrides", len(cands), "refused", len(refused))
		res := claim.DeepCopy()
		p.fillClaim(res, id, c.it, zone, capacityType, c.image.id, c.offering.Price, model)
		if capacityType == cloud.CapacityTypeReserved {
			res.Labels = reservationLabels(res.Labels, c.offering.ReservationID, c.reservationType)
		}
		res.Annotations = cloud.CopyNodeClassHash(res.Annotations, tags)
		return res, nil
	}
	if len(out.Errors) == 0 {
		return nil, fmt.Errorf("CreateFleet for NodeClaim %s launched nothing and reported no error", claim.Name)
	}
	first := out.Errors[0]
	cause := fmt.Errorf("%s: %s", aws.ToString(first.ErrorCode), aws.ToString(first.ErrorMessage))
	if len(refused) > 0 {
		return nil, &cloud.InsufficientCapacityError{Offerings: refused, Err: cause}
	}
	return nil, fmt.Errorf("CreateFleet for NodeClaim %s: %w", claim.Name, cause)
}

func zoneOfSubnet(rc *resolvedClass, id string) string {
	for _, s := range rc.status.Subnets {
		if s.ID == id {
			return s.Zone
		}
	}
	return ""
}

// fleetConfigs creates (or reuses) a launch template per image and max-pods
// value among the candidates, and returns the fleet's configurations with
// each candidate as an override of its template.
func (p *Provider) fleetConfigs(ctx context.Context, claim *v1alpha1.NodeClaim, rc *resolvedClass, bds []blockDevice, cands []candidate) ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
	type key struct {
		image       string
		maxPods     int64
		reservation string
	}
	var order []key
	byKey := map[key][]candidate{}
	for _, c := range cands {
		k := key{c.image.id, c.maxPods, c.offering.ReservationID}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], c)
	}
	taints := append(slices.Clone(claim.Spec.Taints), claim.Spec.StartupTaints...)
	taints = append(taints, cloud.UnregisteredTaint)
	prioritized := claim.Annotations[cloud.AnnotationPriceOverlayApplied] == "true"
	var out []ec2types.FleetLaunchTemplateConfigRequest
	for _, k := range order {
		labels, kind := claim.Labels, byKey[k][0].reservationType
		if k.reservation != "" {
			// The template launches into this reservation only: its
			// nodes join labelled with it, as Karpenter labels them.
			labels = reservationLabels(labels, k.reservation, kind)
		}
		b := bootstrap{
			ClusterName: p.opts.ClusterName, ClusterEndpoint: p.opts.ClusterEndpoint, ClusterCABundle: p.opts.ClusterCABundle,
			ServiceCIDR: p.opts.ClusterServiceCIDR, Labels: labels, Taints: taints, MaxPods: k.maxPods,
			Kubelet: rc.spec.Kubelet, Custom: aws.ToString(rc.spec.UserData),
		}
		ud, err := b.UserData(rc.family)
		if err != nil {
			return nil, fmt.Errorf("aws: user data for NodeClaim %s: %w", claim.Name, err)
		}
		lc := &launchConfig{
			NodeClass: rc.name, ImageID: k.image, UserData: ud, SecurityGroupIDs: sortedSecurityGroupIDs(rc.status.SecurityGroups),
			InstanceProfile: rc.status.InstanceProfile, BlockDevices: bds, PublicIP: rc.spec.AssociatePublicIPAddress,
			Monitoring: aws.ToBool(rc.spec.DetailedMonitoring), CapacityReservationID: k.reservation,
			CapacityBlock: kind == ReservationTypeCapacityBlock,
		}
		metadataDefaults(rc.spec.MetadataOptions, lc)
		id, err := p.ensureLaunchTemplate(ctx, lc)
		if err != nil {
			return nil, err
		}
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(id), Version: aws.String("$Latest")},
		}
		for _, c := range byKey[k] {
			o := ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType: ec2types.InstanceType(c.it.Name), SubnetId: aws.String(c.subnet), AvailabilityZone: aws.String(c.offering.Zone),
			}
			if prioritized {
				// Lower is taken first; cands are in the claim's order.
				o.Priority = aws.Float64(float64(slices.IndexFunc(cands, func(x candidate) bool { return x.subnet == c.subnet && x.it.Name == c.it.Name })))
			}
			cfg.Overrides = append(cfg.Overrides, o)
		}
		out = append(out, cfg)
	}
	return out, nil
}

// recordFleetErrors marks the offerings refused for capacity unavailable
// (for a launch into reservations, the reservations refused), counts
// them, and returns them as type/zone/capacity-type.
func (p *Provider) recordFleetErrors(claim *v1alpha1.NodeClaim, capacityType string, errs []ec2types.CreateFleetError, cands []candidate) []string {
	var refused []string
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		var typ, zone string
		if lo := e.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
			typ, zone = string(lo.Overrides.InstanceType), aws.ToString(lo.Overrides.AvailabilityZone)
			if zone == "" {
				if i := slices.IndexFunc(cands, func(c candidate) bool { return c.subnet == aws.ToString(lo.Overrides.SubnetId) }); i >= 0 {
					zone = cands[i].offering.Zone
				}
			}
		}
		ct := capacityType
		reservation := ""
		if i := slices.IndexFunc(cands, func(c candidate) bool { return c.it.Name == typ && c.offering.Zone == zone }); i >= 0 {
			reservation = cands[i].offering.ReservationID
		}
		p.log.Info("fleet refused an offering", "nodeClaim", claim.Name, "instanceType", typ, "zone", zone, "capacityType", ct,
			"capacityReservation", reservation, "code", code, "message", aws.ToString(e.ErrorMessage))
		if !capacityErrors[code] || typ == "" || zone == "" {
			continue
		}
		if reservation != "" {
			p.unavailable.MarkReservationUnavailable(reservation)
		} else {
			p.unavailable.MarkUnavailable(typ, zone, ct)
		}
		p.metrics.insufficientCapacity.WithLabelValues(typ, zone, ct, code).Inc()
		refused = append(refused, typ+"/"+zone+"/"+ct)
	}
	return refused
}

// instanceTags are the tags of the instance and its volumes: the class's
// own, then the ones the provider finds its instances by.
func (p *Provider) instanceTags(claim *v1alpha1.NodeClaim, rc *resolvedClass) map[string]string {
	tags := maps.Clone(rc.spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	if _, ok := tags["Name"]; !ok {
		tags["Name"] = claim.Name
	}
	tags["kubernetes.io/cluster/"+p.opts.ClusterName] = "owned"
	tags[TagCluster] = p.opts.ClusterName
	tags[TagNodeClaim] = claim.Name
	tags[TagNodeClass] = rc.name
	if pool := claim.Labels[v1alpha1.LabelNodePool]; pool != "" {
		tags[TagNodePool] = pool
	}
	if v := claim.Annotations[cloud.AnnotationLaunchedDirectly]; v != "" {
		tags[cloud.AnnotationLaunchedDirectly] = v
	}
	// The class's hash goes on the instance too, so that a retried Create
	// and the views of Get and List (adoption) carry it back.
	cloud.StampNodeClassHash(tags, rc.spec.Hash(), v1alpha1.EC2NodeClassHashVersion)
	return tags
}

// fillClaim writes what was launched into the claim's status and labels.
func (p *Provider) fillClaim(nc *v1alpha1.NodeClaim, id string, it *cloud.InstanceType, zone, capacityType, imageID string, price float64, model cloud.NodeModel) {
	nc.Status.ProviderID = "aws:///" + zone + "/" + id
	nc.Status.InstanceType = it.Name
	nc.Status.Zone = zone
	nc.Status.CapacityType = capacityType
	nc.Status.ImageID = imageID
	if price > 0 {
		nc.Status.PricePerHour = strconv.FormatFloat(price, 'f', -1, 64)
	}
	st := model.SolverType(it, p.region)
	nc.Status.Capacity = cloud.ResourceList(st.Capacity)
	nc.Status.Allocatable = cloud.ResourceList(st.Capacity.Sub(st.Overhead))
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	maps.Copy(nc.Labels, st.Labels)
	nc.Labels[corev1.LabelTopologyZone] = zone
	nc.Labels[v1alpha1.LabelCapacityType] = capacityType
}

// liveStates are the states of instances that exist for the operator.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// findByClaim returns the live instance launched for the claim, if any.
func (p *Provider) findByClaim(ctx context.Context, name string) (*ec2types.Instance, error) {
	found, err := p.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagCluster), Values: []string{p.opts.ClusterName}},
		{Name: aws.String("tag:" + TagNodeClaim), Values: []string{name}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return &found[0], nil
}

func (p *Provider) describeInstances(ctx context.Context, in *ec2.DescribeInstancesInput) ([]ec2types.Instance, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	var out []ec2types.Instance
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

// ParseProviderID returns the instance ID of an aws:///zone/i-… provider ID.
func ParseProviderID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return "", fmt.Errorf("provider ID %q is not of the form aws:///zone/instance-id", providerID)
	}
	id := rest[strings.LastIndexByte(rest, '/')+1:]
	if !strings.HasPrefix(id, "i-") || len(id) < 3 {
		return "", fmt.Errorf("provider ID %q has no instance ID", providerID)
	}
	return id, nil
}

// instance returns the instance behind a provider ID, or a *cloud.NotFoundError
// when it does not exist or is terminated.
func (p *Provider) instance(ctx context.Context, providerID string) (*ec2types.Instance, error) {
	id, err := ParseProviderID(providerID)
	if err != nil {
		return nil, err
	}
	found, err := p.describeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if apiErrorCode(err) == "InvalidInstanceID.NotFound" {
		return nil, &cloud.NotFoundError{ProviderID: providerID}
	}
	if err != nil {
		return nil, fmt.Errorf("DescribeInstances %s: %w", id, err)
	}
	if len(found) == 0 || found[0].State == nil || found[0].State.Name == ec2types.InstanceStateNameTerminated ||
		found[0].State.Name == ec2types.InstanceStateNameShuttingDown {
		return nil, &cloud.NotFoundError{ProviderID: providerID}
	}
	return &found[0], nil
}

// Delete implements cloud.CloudProvider: it terminates the instance, and
// returns a *cloud.NotFoundError once it is gone (shutting down counts as
// gone). A claim without a provider ID (its launch's status never written,
// e.g. after a crash) is looked up by its NodeClaim tag. It refuses
// instances not tagged for this cluster.
func (p *Provider) Delete(ctx context.Context, claim *v1alpha1.NodeClaim) error {
	var in *ec2types.Instance
	var err error
	if claim.Status.ProviderID == "" {
		if in, err = p.findByClaim(ctx, claim.Name); err != nil {
			return fmt.Errorf("DescribeInstances for NodeClaim %s: %w", claim.Name, err)
		}
		if in == nil {
			return &cloud.NotFoundError{ProviderID: "of NodeClaim " + claim.Name}
		}
	} else if in, err = p.instance(ctx, claim.Status.ProviderID); err != nil {
		return err
	}
	if tagValue(in.Tags, TagCluster) != p.opts.ClusterName {
		return fmt.Errorf("aws: instance %s is not tagged %s=%s; refusing to terminate it", aws.ToString(in.InstanceId), TagCluster, p.opts.ClusterName)
	}
	ctx, cancel := p.call(ctx)
	defer cancel()
	_, err = p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(in.InstanceId)}})
	if apiErrorCode(err) == "InvalidInstanceID.NotFound" {
		return &cloud.NotFoundError{ProviderID: cmp.Or(claim.Status.ProviderID, aws.ToString(in.InstanceId))}
	}
	if err != nil {
		return fmt.Errorf("TerminateInstances %s: %w", aws.ToString(in.InstanceId), err)
	}
	p.metrics.terminations.Inc()
	p.log.Info("terminated instance", "nodeClaim", claim.Name, "instance", aws.ToString(in.InstanceId))
	return nil
}

// Get implements cloud.CloudProvider.
func (p *Provider) Get(ctx context.Context, providerID string) (*v1alpha1.NodeClaim, error) {
	in, err := p.instance(ctx, providerID)
	if err != nil {
		return nil, err
	}
	return p.claimView(nil, in, p.typeIndex()), nil
}

// List implements cloud.CloudProvider: every live instance tagged for this
// cluster, with the NodeClaim name (from its tag) as the claim's name and
// the launch time as its creation time.
func (p *Provider) List(ctx context.Context) ([]*v1alpha1.NodeClaim, error) {
	found, err := p.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagCluster), Values: []string{p.opts.ClusterName}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	if err != nil {
		return nil, fmt.Errorf("DescribeInstances: %w", err)
	}
	out := make([]*v1alpha1.NodeClaim, 0, len(found))
	index := p.typeIndex()
	for i := range found {
		out = append(out, p.claimView(nil, &found[i], index))
	}
	return out, nil
}

func tagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// claimView is the NodeClaim view of an instance: base (a copy) when given,
// else one built from the instance's tags; the node class hash comes from
// the instance's tags either way.
func (p *Provider) claimView(base *v1alpha1.NodeClaim, in *ec2types.Instance, index map[string]cloud.InstanceType) *v1alpha1.NodeClaim {
	var nc *v1alpha1.NodeClaim
	if base != nil {
		nc = base.DeepCopy()
	} else {
		nc = &v1alpha1.NodeClaim{}
		nc.Name = tagValue(in.Tags, TagNodeClaim)
		nc.Labels = map[string]string{}
		if pool := tagValue(in.Tags, TagNodePool); pool != "" {
			nc.Labels[v1alpha1.LabelNodePool] = pool
			nc.Labels[v1alpha1.KarpenterLabelNodePool] = pool
		}
		nc.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: tagValue(in.Tags, TagNodeClass)}
		if v := tagValue(in.Tags, cloud.AnnotationLaunchedDirectly); v != "" {
			nc.Annotations = map[string]string{cloud.AnnotationLaunchedDirectly: v}
		}
		if in.LaunchTime != nil {
			nc.CreationTimestamp = metav1.NewTime(*in.LaunchTime)
		}
	}
	zone := ""
	if in.Placement != nil {
		zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	ct := cloud.CapacityTypeOnDemand
	reservation := reservedIn(in)
	switch {
	case in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot:
		ct = cloud.CapacityTypeSpot
	case reservation != "":
		ct = cloud.CapacityTypeReserved
	}
	typ := string(in.InstanceType)
	it := p.lookupType(index, typ)
	price := 0.0
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == ct {
			price = o.Price
		}
	}
	if ct == cloud.CapacityTypeReserved {
		price = reservedPrice(&it, zone)
	}
	p.fillClaim(nc, aws.ToString(in.InstanceId), &it, zone, ct, aws.ToString(in.ImageId), price, p.opts.NodeModel)
	if ct == cloud.CapacityTypeReserved {
		kind := ReservationTypeDefault
		if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeCapacityBlock {
			kind = ReservationTypeCapacityBlock
		}
		nc.Labels = reservationLabels(nc.Labels, reservation, kind)
	}
	nc.Annotations = cloud.CopyNodeClassHash(nc.Annotations, map[string]string{
		v1alpha1.AnnotationNodeClassHash:        tagValue(in.Tags, v1alpha1.AnnotationNodeClassHash),
		v1alpha1.AnnotationNodeClassHashVersion: tagValue(in.Tags, v1alpha1.AnnotationNodeClassHashVersion),
	})
	return nc
}

// typeIndex returns every type on sale by name, with all its offerings,
// unavailable ones included.
func (p *Provider) typeIndex() map[string]cloud.InstanceType {
	types := p.instanceTypes(true)
	out := make(map[string]cloud.InstanceType, len(types))
	for _, it := range types {
		out[it.Name] = it
	}
	return out
}

// lookupType returns the named type from the index, or a bare shape when
// it is not on sale.
func (p *Provider) lookupType(index map[string]cloud.InstanceType, name string) cloud.InstanceType {
	if it, ok := index[name]; ok {
		return it
	}
	p.mu.RLock()
	it, ok := p.apiTypes[name]
	p.mu.RUnlock()
	if !ok {
		it, _ = p.catalog.Lookup(name)
	}
	it.Name = name
	it.Offerings = nil
	return it
}
