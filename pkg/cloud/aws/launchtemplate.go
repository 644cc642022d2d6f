package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Tags the provider puts on what it creates.
const (
	TagCluster   = "rightsize.dev/cluster"
	TagNodePool  = v1alpha1.LabelNodePool
	TagNodeClaim = "rightsize.dev/nodeclaim"
	TagNodeClass = "rightsize.dev/ec2nodeclass"
)

// launchConfig is one distinct launch template: everything in it is part of
// its name, so equal configurations share a template.
type launchConfig struct {
	NodeClass        string        `json:"nodeClass"`
	ImageID          string        `json:"imageID"`
	UserData         string        `json:"userData"` // base64
	SecurityGroupIDs []string      `json:"securityGroupIDs"`
	InstanceProfile  string        `json:"instanceProfile,omitempty"`
	HTTPEndpoint     string        `json:"httpEndpoint"`
	HTTPTokens       string        `json:"httpTokens"`
	HTTPProtocolIPv6 string        `json:"httpProtocolIPv6"`
	HopLimit         int32         `json:"hopLimit"`
	BlockDevices     []blockDevice `json:"blockDevices,omitempty"`
	PublicIP         *bool         `json:"publicIP,omitempty"`
	Monitoring       bool          `json:"monitoring,omitempty"`
	// CapacityReservationID makes the template launch into that capacity
	// reservation only, and CapacityBlock says it is a capacity block
	// (market type capacity-block), as Karpenter's reserved templates.
	CapacityReservationID string `json:"capacityReservationID,omitempty"`
	CapacityBlock         bool   `json:"capacityBlock,omitempty"`
}

type blockDevice struct {
	DeviceName          string `json:"deviceName"`
	SizeGiB             int32  `json:"sizeGiB,omitempty"`
	VolumeType          string `json:"volumeType,omitempty"`
	IOPS                int32  `json:"iops,omitempty"`
	Throughput          int32  `json:"throughput,omitempty"`
	Encrypted           *bool  `json:"encrypted,omitempty"`
	DeleteOnTermination *bool  `json:"deleteOnTermination,omitempty"`
	KMSKeyID            string `json:"kmsKeyID,omitempty"`
	SnapshotID          string `json:"snapshotID,omitempty"`
	Root                bool   `json:"root,omitempty"`
}

// name is the template's name: the cluster and a hash of the configuration.
func (c *launchConfig) name(cluster string) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return launchTemplateNamePrefix + "/" + cluster + "/" + hex.EncodeToString(sum[:10])
}

// metadataDefaults fills the class's metadata options with the defaults:
// IMDSv2 only (httpTokens required), hop limit 1, IPv4 endpoint on.
func metadataDefaults(m *v1alpha1.MetadataOptions, c *launchConfig) {
	c.HTTPEndpoint, c.HTTPTokens, c.HTTPProtocolIPv6, c.HopLimit = "enabled", "required", "disabled", 1
	if m == nil {
		return
	}
	if m.HTTPEndpoint != nil {
		c.HTTPEndpoint = *m.HTTPEndpoint
	}
	if m.HTTPTokens != nil {
		c.HTTPTokens = *m.HTTPTokens
	}
	if m.HTTPProtocolIPv6 != nil {
		c.HTTPProtocolIPv6 = *m.HTTPProtocolIPv6
	}
	if m.HTTPPutResponseHopLimit != nil {
		c.HopLimit = int32(*m.HTTPPutResponseHopLimit)
	}
}

// blockDevices returns the class's disks, or the family's default root
// volume: 20 GiB gp3, encrypted (Bottlerocket: a 4 GiB OS volume and a 20
// GiB data volume).
func blockDevices(family string, mappings []v1alpha1.BlockDeviceMapping) []blockDevice {
	yes := true
	if len(mappings) == 0 {
		switch family {
		case FamilyBottlerocket:
			return []blockDevice{
				{DeviceName: "/dev/xvda", SizeGiB: 4, VolumeType: "gp3", Encrypted: &yes, DeleteOnTermination: &yes},
				{DeviceName: "/dev/xvdb", SizeGiB: 20, VolumeType: "gp3", Encrypted: &yes, DeleteOnTermination: &yes, Root: true},
			}
		case FamilyCustom:
			return nil
		}
		return []blockDevice{{DeviceName: "/dev/xvda", SizeGiB: 20, VolumeType: "gp3", Encrypted: &yes, DeleteOnTermination: &yes, Root: true}}
	}
	out := make([]blockDevice, 0, len(mappings))
	for _, m := range mappings {
		bd := blockDevice{DeviceName: aws.ToString(m.DeviceName), Root: m.RootVolume}
		if e := m.EBS; e != nil {
			bd.VolumeType = aws.ToString(e.VolumeType)
			bd.Encrypted, bd.DeleteOnTermination = e.Encrypted, e.DeleteOnTermination
			bd.KMSKeyID, bd.SnapshotID = aws.ToString(e.KMSKeyID), aws.ToString(e.SnapshotID)
			if e.IOPS != nil {
				bd.IOPS = int32(*e.IOPS)
			}
			if e.Throughput != nil {
				bd.Throughput = int32(*e.Throughput)
			}
			if e.VolumeSize != nil {
				bd.SizeGiB = int32(math.Ceil(float64(e.VolumeSize.Value()) / (1 << 30)))
			}
		}
		out = append(out, bd)
	}
	return out
}

// rootVolumeBytes is the size of the disk kubelet's ephemeral storage lives on.
func rootVolumeBytes(bds []blockDevice) int64 {
	for _, bd := range bds {
		if bd.Root {
			return int64(bd.SizeGiB) << 30
		}
	}
	if len(bds) > 0 {
		return int64(bds[0].SizeGiB) << 30
	}
	return 0
}

func (c *launchConfig) data() *ec2types.RequestLaunchTemplateData {
	d := &ec2types.RequestLaunchTemplateData{
		ImageId:  aws.String(c.ImageID),
		UserData: aws.String(c.UserData),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(c.HTTPEndpoint),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(c.HTTPTokens),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(c.HTTPProtocolIPv6),
			HttpPutResponseHopLimit: aws.Int32(c.HopLimit),
		},
		Monitoring: &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(c.Monitoring)},
	}
	if c.CapacityReservationID != "" {
		d.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(c.CapacityReservationID)},
		}
	}
	if c.CapacityBlock {
		d.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
	}
	if c.InstanceProfile != "" {
		d.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(c.InstanceProfile)}
	}
	if c.PublicIP != nil {
		d.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: c.PublicIP, Groups: c.SecurityGroupIDs,
		}}
	} else {
		d.SecurityGroupIds = c.SecurityGroupIDs
	}
	for _, bd := range c.BlockDevices {
		ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{Encrypted: bd.Encrypted, DeleteOnTermination: bd.DeleteOnTermination}
		if bd.SizeGiB > 0 {
			ebs.VolumeSize = aws.Int32(bd.SizeGiB)
		}
		if bd.VolumeType != "" {
			ebs.VolumeType = ec2types.VolumeType(bd.VolumeType)
		}
		if bd.IOPS > 0 {
			ebs.Iops = aws.Int32(bd.IOPS)
		}
		if bd.Throughput > 0 {
			ebs.Throughput = aws.Int32(bd.Throughput)
		}
		if bd.KMSKeyID != "" {
			ebs.KmsKeyId = aws.String(bd.KMSKeyID)
		}
		if bd.SnapshotID != "" {
			ebs.SnapshotId = aws.String(bd.SnapshotID)
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(bd.DeviceName), Ebs: ebs})
	}
	return d
}

func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// ensureLaunchTemplate returns the ID of the template for c, creating it
// when it does not exist yet.
func (p *Provider) ensureLaunchTemplate(ctx context.Context, c *launchConfig) (string, error) {
	name := c.name(p.opts.ClusterName)
	p.ltMu.Lock()
	id, ok := p.templates[name]
	p.ltMu.Unlock()
	if ok {
		p.touchTemplate(name, id)
		return id, nil
	}
	ctx, cancel := p.call(ctx)
	defer cancel()
	id, err := p.findLaunchTemplate(ctx, name)
	if err != nil {
		return "", err
	}
	if id == "" {
		out, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: c.data(),
			TagSpecifications: []ec2types.TagSpecification{{
				ResourceType: ec2types.ResourceTypeLaunchTemplate,
				Tags: []ec2types.Tag{
					{Key: aws.String(TagCluster), Value: aws.String(p.opts.ClusterName)},
					{Key: aws.String(TagNodeClass), Value: aws.String(c.NodeClass)},
				},
			}},
		})
		switch {
		case apiErrorCode(err) == "InvalidLaunchTemplateName.AlreadyExistsException":
			if id, err = p.findLaunchTemplate(ctx, name); err != nil {
				return "", err
			}
		case err != nil:
			return "", fmt.Errorf("CreateLaunchTemplate: %w", err)
		default:
			id = aws.ToString(out.LaunchTemplate.LaunchTemplateId)
			p.log.Info("created launch template", "name", name, "id", id, "nodeClass", c.NodeClass, "image", c.ImageID,
				"httpTokens", c.HTTPTokens, "hopLimit", c.HopLimit)
		}
	}
	p.touchTemplate(name, id)
	return id, nil
}

func (p *Provider) touchTemplate(name, id string) {
	p.ltMu.Lock()
	defer p.ltMu.Unlock()
	p.templates[name] = id
	if p.templateUsed == nil {
		p.templateUsed = map[string]time.Time{}
	}
	p.templateUsed[name] = p.opts.Now()
}

func (p *Provider) findLaunchTemplate(ctx context.Context, name string) (string, error) {
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if apiErrorCode(err) == "InvalidLaunchTemplateName.NotFoundException" {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("DescribeLaunchTemplates: %w", err)
	}
	if len(out.LaunchTemplates) == 0 {
		return "", nil
	}
	return aws.ToString(out.LaunchTemplates[0].LaunchTemplateId), nil
}

// DeleteLaunchTemplates deletes this cluster's launch templates of a node
// class (every node class when nodeClass is empty), e.g. when the class is
// deleted. It returns how many it deleted.
func (p *Provider) DeleteLaunchTemplates(ctx context.Context, nodeClass string) (int, error) {
	return p.deleteTemplates(ctx, nodeClass, func(string, time.Time) bool { return true })
}

// PruneLaunchTemplates deletes this cluster's launch templates that were
// neither created nor used by this provider within maxAge: templates of
// configurations that changed (a new image, new user data) or of classes
// that no longer exist. Templates are recreated on demand.
func (p *Provider) PruneLaunchTemplates(ctx context.Context, maxAge time.Duration) (int, error) {
	now := p.opts.Now()
	return p.deleteTemplates(ctx, "", func(name string, created time.Time) bool {
		p.ltMu.Lock()
		used, ok := p.templateUsed[name]
		p.ltMu.Unlock()
		return now.Sub(created) > maxAge && (!ok || now.Sub(used) > maxAge)
	})
}

func (p *Provider) deleteTemplates(ctx context.Context, nodeClass string, del func(name string, created time.Time) bool) (int, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	filters := []ec2types.Filter{{Name: aws.String("tag:" + TagCluster), Values: []string{p.opts.ClusterName}}}
	if nodeClass != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + TagNodeClass), Values: []string{nodeClass}})
	}
	var victims []ec2types.LaunchTemplate
	pages := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{Filters: filters})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("DescribeLaunchTemplates: %w", err)
		}
		for _, lt := range out.LaunchTemplates {
			if del(aws.ToString(lt.LaunchTemplateName), aws.ToTime(lt.CreateTime)) {
				victims = append(victims, lt)
			}
		}
	}
	n := 0
	var errs []error
	for _, lt := range victims {
		_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId})
		if err != nil && apiErrorCode(err) != "InvalidLaunchTemplateId.NotFound" {
			errs = append(errs, fmt.Errorf("DeleteLaunchTemplate %s: %w", aws.ToString(lt.LaunchTemplateId), err))
			continue
		}
		n++
		name := aws.ToString(lt.LaunchTemplateName)
		p.ltMu.Lock()
		delete(p.templates, name)
		delete(p.templateUsed, name)
		p.ltMu.Unlock()
		p.log.Info("deleted launch template", "name", name, "id", aws.ToString(lt.LaunchTemplateId))
	}
	return n, errors.Join(errs...)
}

// sortedSecurityGroupIDs returns the IDs of the resolved groups, sorted.
func sortedSecurityGroupIDs(groups []v1alpha1.SecurityGroup) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.ID
	}
	slices.Sort(out)
	return out
}
