package ec2test

import (
	"slices"
)

// Subnet is a subnet.
type Subnet struct {
	ID, Zone, ZoneID, VpcID string
	AvailableIPs            int
	Tags                    map[string]string
}

// SecurityGroup is a security group.
type SecurityGroup struct {
	ID, Name string
	Tags     map[string]string
}

// AddSubnet adds a subnet.
func (s *Server) AddSubnet(sn Subnet) { s.mu.Lock(); s.subnets = append(s.subnets, sn); s.mu.Unlock() }

// AddSecurityGroup adds a security group.
func (s *Server) AddSecurityGroup(g SecurityGroup) {
	s.mu.Lock()
	s.groups = append(s.groups, g)
	s.mu.Unlock()
}

func (s *Server) describeSubnets(m meta, p params) (any, error) {
	ids := p.list("SubnetId")
	var all []subnetXML
	for _, sn := range s.subnets {
		if len(ids) > 0 && !slices.Contains(ids, sn.ID) {
			continue
		}
		ok, err := matchTagged(p.filters(), fields{
			"subnet-id": {sn.ID}, "availability-zone": {sn.Zone}, "vpc-id": {sn.VpcID}, "state": {"available"},
		}, sn.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			all = append(all, subnetXML{SubnetID: sn.ID, State: "available", VpcID: sn.VpcID, CidrBlock: "10.0.0.0/24",
				AvailableIPs: sn.AvailableIPs, AvailabilityZone: sn.Zone, ZoneID: sn.ZoneID, Tags: tagsXML(sn.Tags)})
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(s.subnets, func(sn Subnet) bool { return sn.ID == id }) {
			return nil, badRequest("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeSubnetsXML{meta: m, Subnets: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) describeSecurityGroups(m meta, p params) (any, error) {
	ids, names := p.list("GroupId"), p.list("GroupName")
	var all []securityGroupXML
	for _, g := range s.groups {
		if (len(ids) > 0 && !slices.Contains(ids, g.ID)) || (len(names) > 0 && !slices.Contains(names, g.Name)) {
			continue
		}
		ok, err := matchTagged(p.filters(), fields{"group-id": {g.ID}, "group-name": {g.Name}}, g.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			all = append(all, securityGroupXML{GroupID: g.ID, GroupName: g.Name, Description: g.Name, VpcID: "vpc-1", Tags: tagsXML(g.Tags)})
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(s.groups, func(g SecurityGroup) bool { return g.ID == id }) {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeSecurityGroupsXML{meta: m, Groups: itemsOf(pg), NextToken: next}, nil
}
