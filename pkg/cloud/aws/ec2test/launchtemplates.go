package ec2test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// BlockDevice is a launch template's block device mapping.
type BlockDevice struct {
	DeviceName          string
	VolumeSize          int
	VolumeType          string
	IOPS, Throughput    int
	Encrypted           *bool
	DeleteOnTermination *bool
	KMSKeyID            string
	SnapshotID          string
}

// LaunchTemplateData is what a launch template holds.
type LaunchTemplateData struct {
	ImageID          string
	UserData         string // base64, as sent
	InstanceProfile  string
	SecurityGroupIDs []string
	HTTPEndpoint     string
	HTTPTokens       string
	HTTPProtocolIPv6 string
	HopLimit         int
	BlockDevices     []BlockDevice
	// TagSpecs are tags by resource type (instance, volume, …).
	TagSpecs          map[string]map[string]string
	AssociatePublicIP *bool
	Monitoring        bool
	// CapacityReservationPreference is "capacity-reservations-only",
	// "open" or "none" (empty when not set); with
	// CapacityReservationID, instances launch only into that
	// reservation.
	CapacityReservationPreference string
	CapacityReservationID         string
	// MarketType is the instance market: "capacity-block" for capacity
	// blocks, "spot", or empty.
	MarketType string
}

// LaunchTemplate is a launch template.
type LaunchTemplate struct {
	ID, Name string
	Created  time.Time
	Tags     map[string]string
	Data     LaunchTemplateData
}

// LaunchTemplates returns every launch template.
func (s *Server) LaunchTemplates() []LaunchTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LaunchTemplate, 0, len(s.templates))
	for _, lt := range s.templates {
		out = append(out, *lt)
	}
	slices.SortFunc(out, func(a, b LaunchTemplate) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) ltXML(lt *LaunchTemplate) launchTemplateXML {
	return launchTemplateXML{ID: lt.ID, Name: lt.Name, CreateTime: timeXML(lt.Created), DefaultVersion: 1, LatestVersion: 1, Tags: tagsXML(lt.Tags)}
}

func (s *Server) createLaunchTemplate(m meta, p params) (any, error) {
	name := p.get("LaunchTemplateName")
	if name == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateName")
	}
	for _, lt := range s.templates {
		if lt.Name == name {
			return nil, badRequest("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
		}
	}
	d := p.sub("LaunchTemplateData")
	data := LaunchTemplateData{
		ImageID:          d.get("ImageId"),
		UserData:         d.get("UserData"),
		InstanceProfile:  cmp.Or(d.get("IamInstanceProfile.Name"), d.get("IamInstanceProfile.Arn")),
		SecurityGroupIDs: d.list("SecurityGroupId"),
		HTTPEndpoint:     d.get("MetadataOptions.HttpEndpoint"),
		HTTPTokens:       d.get("MetadataOptions.HttpTokens"),
		HTTPProtocolIPv6: d.get("MetadataOptions.HttpProtocolIpv6"),
		HopLimit:         d.int("MetadataOptions.HttpPutResponseHopLimit", 0),
		TagSpecs:         d.tagSpecs("TagSpecification"),
		Monitoring:       d.bool("Monitoring.Enabled"),

		CapacityReservationPreference: d.get("CapacityReservationSpecification.CapacityReservationPreference"),
		CapacityReservationID:         d.get("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"),
		MarketType:                    d.get("InstanceMarketOptions.MarketType"),
	}
	for _, b := range d.structs("BlockDeviceMapping") {
		bd := BlockDevice{DeviceName: b.get("DeviceName"), VolumeSize: b.int("Ebs.VolumeSize", 0), VolumeType: b.get("Ebs.VolumeType"),
			IOPS: b.int("Ebs.Iops", 0), Throughput: b.int("Ebs.Throughput", 0), KMSKeyID: b.get("Ebs.KmsKeyId"), SnapshotID: b.get("Ebs.SnapshotId")}
		if b.has("Ebs.Encrypted") {
			v := b.bool("Ebs.Encrypted")
			bd.Encrypted = &v
		}
		if b.has("Ebs.DeleteOnTermination") {
			v := b.bool("Ebs.DeleteOnTermination")
			bd.DeleteOnTermination = &v
		}
		data.BlockDevices = append(data.BlockDevices, bd)
	}
	for _, ni := range d.structs("NetworkInterface") {
		if ni.has("AssociatePublicIpAddress") {
			v := ni.bool("AssociatePublicIpAddress")
			data.AssociatePublicIP = &v
		}
		data.SecurityGroupIDs = append(data.SecurityGroupIDs, ni.list("SecurityGroupId")...)
	}
	if data.ImageID == "" {
		return nil, badRequest("InvalidParameterValue", "LaunchTemplateData.ImageId is required by this server")
	}
	if id := data.CapacityReservationID; id != "" && s.reservation(id) == nil {
		return nil, badRequest("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
	}
	if !slices.ContainsFunc(s.images, func(im Image) bool { return im.ID == data.ImageID }) {
		return nil, badRequest("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", data.ImageID)
	}
	s.seq++
	lt := &LaunchTemplate{ID: fmt.Sprintf("lt-%017x", s.seq), Name: name, Created: s.now(), Data: data, Tags: p.tagSpecs("TagSpecification")["launch-template"]}
	s.templates[lt.ID] = lt
	return createLaunchTemplateXML{meta: m, LaunchTemplate: s.ltXML(lt)}, nil
}

func (s *Server) describeLaunchTemplates(m meta, p params) (any, error) {
	ids, names := p.list("LaunchTemplateId"), p.list("LaunchTemplateName")
	var all []launchTemplateXML
	found := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(s.templates)) {
		lt := s.templates[id]
		if (len(ids) > 0 && !slices.Contains(ids, lt.ID)) || (len(names) > 0 && !slices.Contains(names, lt.Name)) {
			continue
		}
		ok, err := matchTagged(p.filters(), fields{"launch-template-name": {lt.Name}}, lt.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			found[lt.ID], found[lt.Name] = true, true
			all = append(all, s.ltXML(lt))
		}
	}
	for _, n := range names {
		if !found[n] {
			return nil, badRequest("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
		}
	}
	for _, id := range ids {
		if !found[id] {
			return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeLaunchTemplatesXML{meta: m, LaunchTemplates: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) deleteLaunchTemplate(m meta, p params) (any, error) {
	id, name := p.get("LaunchTemplateId"), p.get("LaunchTemplateName")
	for k, lt := range s.templates {
		if (id != "" && lt.ID == id) || (name != "" && lt.Name == name) {
			delete(s.templates, k)
			return createLaunchTemplateXML{meta: m, LaunchTemplate: s.ltXML(lt)}, nil
		}
	}
	if id != "" {
		return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	}
	return nil, badRequest("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
}
