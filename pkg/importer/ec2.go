package importer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// amiFamilies maps Karpenter's AMI family names, and the seed's
// "AmazonLinux2", to ours.
var amiFamilies = map[string]string{
	"AL2":          "AL2",
	"AmazonLinux2": "AL2",
	"AL2023":       "AL2023",
	"Bottlerocket": "Bottlerocket",
	"Custom":       "Custom",
	"Windows2019":  "Windows2019",
	"Windows2022":  "Windows2022",
}

// ec2NodeClass converts an EC2NodeClass of karpenter.k8s.aws/v1beta1 or v1
// (or the seed's karpenter.sh/v1alpha5).
func (c *converter) ec2NodeClass(where, apiVersion string, j []byte) error {
	var o karpenter.EC2NodeClass
	if err := snapshot.DecodeStrict(j, &o); err != nil {
		return err
	}
	name := o.Metadata.Name
	if name == "" {
		return errors.New("metadata.name is required")
	}
	where = fmt.Sprintf("%s: EC2NodeClass %q", where, name)
	if apiVersion == karpenter.V1Alpha5 {
		c.warnf(where, "apiVersion karpenter.sh/v1alpha5 never had EC2NodeClass (karpenter.k8s.aws/v1 does); read as karpenter.k8s.aws/v1beta1")
	}
	s := &o.Spec
	class := newEC2NodeClass(o.Metadata)
	out := &class.Spec
	var err error
	if out.SubnetSelectorTerms, err = c.subnetTerms(where, s.SubnetSelectorTerms); err != nil {
		return err
	}
	if out.SecurityGroupSelectorTerms, err = c.securityGroupTerms(where, s.SecurityGroupSelectorTerms); err != nil {
		return err
	}
	var amiTerms []v1alpha1.AMISelectorTerm
	for i, t := range s.AMISelectorTerms {
		if t.OwnerID != "" || t.InstanceMatchCriteria != "" {
			return fmt.Errorf("spec.amiSelectorTerms[%d]: ownerID and instanceMatchCriteria belong to capacity reservation terms", i)
		}
		amiTerms = append(amiTerms, v1alpha1.AMISelectorTerm{Alias: t.Alias, Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner, SSMParameter: t.SSMParameter})
	}
	if err := c.amis(where, "spec", s.AMIFamily, amiTerms, out); err != nil {
		return err
	}
	out.Role = s.Role
	out.InstanceProfile = s.InstanceProfile
	out.UserData = s.UserData
	out.Tags = maps.Clone(s.Tags)
	out.BlockDeviceMappings = c.blockDevices(where, s.BlockDeviceMappings)
	out.MetadataOptions = metadataOptions(s.MetadataOptions)
	out.AssociatePublicIPAddress = s.AssociatePublicIPAddress
	out.DetailedMonitoring = s.DetailedMonitoring
	kubelet, notes, err := karpenter.DecodeKubelet("spec.kubelet", s.Kubelet)
	if err != nil {
		return err
	}
	for _, n := range notes {
		c.warnf(where, "%s", n)
	}
	out.Kubelet = kubelet
	if out.CapacityReservationSelectorTerms, err = c.capacityReservationTerms(where, s.CapacityReservationSelectorTerms); err != nil {
		return err
	}
	for _, f := range []struct {
		field, why string
		set        bool
	}{
		{"instanceStorePolicy", "instance store policies are not supported (instance store disks are left unformatted; pods get the root volume's ephemeral storage)", s.InstanceStorePolicy != nil},
		{"context", "launch contexts are not supported", s.Context != nil},
		{"placementGroupSelector", "placement groups are not supported (nodes launch outside any placement group)", s.PlacementGroupSelector != nil},
		{"networkInterfaces", "network interfaces are not supported (nodes launch with the one default interface)", s.NetworkInterfaces != nil},
		{"ipPrefixCount", "IP prefix delegation is not supported (no prefixes are assigned at launch)", s.IPPrefixCount != nil},
		{"connectionTracking", "connection tracking timeouts are not supported (EC2's defaults apply)", s.ConnectionTracking != nil},
		{"cpuOptions", "CPU options are not supported (nested virtualization is neither requested nor used to filter instance types)", s.CPUOptions != nil},
	} {
		if f.set {
			c.warnf(where, "spec.%s dropped: %s", f.field, f.why)
		}
	}
	if s.Role == "" && s.InstanceProfile == nil {
		c.warnf(where, "neither spec.role nor spec.instanceProfile is set; set one before applying")
	}
	return c.add(where, class, "EC2NodeClass", name)
}

func newEC2NodeClass(meta metav1.ObjectMeta) *v1alpha1.EC2NodeClass {
	return &v1alpha1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: objectMeta(meta),
	}
}

func (c *converter) subnetTerms(where string, in []karpenter.SelectorTerm) ([]v1alpha1.SubnetSelectorTerm, error) {
	var out []v1alpha1.SubnetSelectorTerm
	for i, t := range in {
		if t.Name != "" || t.Alias != "" || t.Owner != "" || t.OwnerID != "" || t.SSMParameter != "" || t.InstanceMatchCriteria != "" {
			return nil, fmt.Errorf("spec.subnetSelectorTerms[%d]: only id and tags select subnets", i)
		}
		out = append(out, v1alpha1.SubnetSelectorTerm{Tags: t.Tags, ID: t.ID})
	}
	if len(out) == 0 {
		c.warnf(where, "spec.subnetSelectorTerms is empty; add one before applying")
	}
	return out, nil
}

func (c *converter) securityGroupTerms(where string, in []karpenter.SelectorTerm) ([]v1alpha1.SecurityGroupSelectorTerm, error) {
	var out []v1alpha1.SecurityGroupSelectorTerm
	for i, t := range in {
		if t.Alias != "" || t.Owner != "" || t.OwnerID != "" || t.SSMParameter != "" || t.InstanceMatchCriteria != "" {
			return nil, fmt.Errorf("spec.securityGroupSelectorTerms[%d]: only id, name and tags select security groups", i)
		}
		out = append(out, v1alpha1.SecurityGroupSelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name})
	}
	if len(out) == 0 {
		c.warnf(where, "spec.securityGroupSelectorTerms is empty; add one before applying")
	}
	return out, nil
}

// capacityReservationTerms converts capacityReservationSelectorTerms,
// which Karpenter validates as its CRD does: each term has tags, an id or
// instanceMatchCriteria, and an id stands alone. A term selecting by
// instanceMatchCriteria is dropped with a warning (ours select by id, or
// by tags and owner): keeping the rest of it would select more
// reservations than it did, and a node never launches into a
// reservation its class did not select.
func (c *converter) capacityReservationTerms(where string, in []karpenter.SelectorTerm) ([]v1alpha1.CapacityReservationSelectorTerm, error) {
	var out []v1alpha1.CapacityReservationSelectorTerm
	for i, t := range in {
		path := fmt.Sprintf("spec.capacityReservationSelectorTerms[%d]", i)
		switch {
		case t.Name != "" || t.Alias != "" || t.Owner != "" || t.SSMParameter != "":
			return nil, fmt.Errorf("%s: only id, tags, ownerID and instanceMatchCriteria select capacity reservations", path)
		case t.ID != "" && (len(t.Tags) > 0 || t.OwnerID != "" || t.InstanceMatchCriteria != ""):
			return nil, fmt.Errorf("%s: id cannot be set with tags, ownerID or instanceMatchCriteria (Karpenter refuses it too)", path)
		case t.ID == "" && len(t.Tags) == 0 && t.InstanceMatchCriteria == "":
			return nil, fmt.Errorf("%s: set tags, id or instanceMatchCriteria", path)
		case t.InstanceMatchCriteria != "":
			c.warnf(where, "%s (instanceMatchCriteria: %s) dropped: capacity reservations are selected by id, or by tags and ownerID, not by match criteria; nodes launch only into the reservations the other terms select",
				path, t.InstanceMatchCriteria)
			continue
		}
		out = append(out, v1alpha1.CapacityReservationSelectorTerm{ID: t.ID, Tags: maps.Clone(t.Tags), OwnerID: t.OwnerID})
	}
	return out, nil
}

// amis sets amiFamily and amiSelectorTerms. A family without terms becomes
// the alias term <family>@latest, as Karpenter v1's migration does.
func (c *converter) amis(where, path string, family *string, terms []v1alpha1.AMISelectorTerm, out *v1alpha1.EC2NodeClassSpec) error {
	out.AMISelectorTerms = terms
	fam := ""
	if family != nil {
		f, ok := amiFamilies[*family]
		switch {
		case ok && f != *family:
			c.warnf(where, "%s.amiFamily: %s became %s, its Karpenter name", path, *family, f)
		case !ok && *family == "Ubuntu" && len(terms) > 0:
			f = "Custom"
			c.warnf(where, "%s.amiFamily: Ubuntu became Custom (Karpenter v1 dropped Ubuntu); the user data must join the cluster on its own", path)
		case !ok:
			return fmt.Errorf("%s.amiFamily: %q cannot be imported (want AL2, AL2023, Bottlerocket, Custom, Windows2019 or Windows2022)", path, *family)
		}
		fam = f
	}
	if len(terms) > 0 {
		if fam != "" {
			out.AMIFamily = &fam
		}
		return nil
	}
	if fam == "Custom" {
		return fmt.Errorf("%s.amiFamily: Custom needs amiSelectorTerms", path)
	}
	from := fmt.Sprintf("%s.amiFamily: %s without amiSelectorTerms", path, fam)
	if fam == "" {
		fam = "AL2"
		from = fmt.Sprintf("no %s.amiFamily or amiSelectorTerms (AL2, Karpenter's old default, assumed)", path)
	}
	alias := strings.ToLower(fam) + "@latest"
	out.AMISelectorTerms = []v1alpha1.AMISelectorTerm{{Alias: alias}}
	c.warnf(where, "%s became amiSelectorTerms: [{alias: %s}]; pin a version (e.g. %s@v20240807) to control upgrades", from, alias, strings.ToLower(fam))
	return nil
}

func (c *converter) blockDevices(where string, in []karpenter.BlockDeviceMapping) []v1alpha1.BlockDeviceMapping {
	var out []v1alpha1.BlockDeviceMapping
	for i, m := range in {
		nm := v1alpha1.BlockDeviceMapping{RootVolume: m.RootVolume}
		if m.DeviceName != "" {
			nm.DeviceName = new(m.DeviceName)
		}
		if e := m.EBS; e != nil {
			nm.EBS = &v1alpha1.BlockDevice{
				DeleteOnTermination: e.DeleteOnTermination,
				Encrypted:           e.Encrypted,
				IOPS:                e.IOPS,
				KMSKeyID:            e.KMSKeyID,
				SnapshotID:          e.SnapshotID,
				Throughput:          e.Throughput,
				VolumeSize:          e.VolumeSize,
				VolumeType:          e.VolumeType,
			}
			if e.VolumeInitializationRate != nil {
				c.warnf(where, "spec.blockDeviceMappings[%d].ebs.volumeInitializationRate dropped: not supported", i)
			}
		}
		out = append(out, nm)
	}
	return out
}

func metadataOptions(m *karpenter.MetadataOptions) *v1alpha1.MetadataOptions {
	if m == nil {
		return nil
	}
	return &v1alpha1.MetadataOptions{
		HTTPEndpoint:            m.HTTPEndpoint,
		HTTPProtocolIPv6:        m.HTTPProtocolIPv6,
		HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit,
		HTTPTokens:              m.HTTPTokens,
	}
}

// awsNodeTemplate converts a karpenter.k8s.aws/v1alpha1 AWSNodeTemplate.
func (c *converter) awsNodeTemplate(where string, j []byte) error {
	var o karpenter.AWSNodeTemplate
	if err := snapshot.DecodeStrict(j, &o); err != nil {
		return err
	}
	name := o.Metadata.Name
	if name == "" {
		return errors.New("metadata.name is required")
	}
	where = fmt.Sprintf("%s: AWSNodeTemplate %q", where, name)
	if o.Spec.APIVersion != "" || o.Spec.Kind != "" {
		return errors.New("spec.apiVersion and spec.kind belong to a Provisioner's inline spec.provider")
	}
	class, err := c.fromAWSProvider(where, "spec", name, o.Spec)
	if err != nil {
		return err
	}
	class.ObjectMeta = objectMeta(o.Metadata)
	c.warnf(where, "became EC2NodeClass %q", name)
	return c.add(where, class, "EC2NodeClass", name)
}

// fromAWSProvider converts an AWSNodeTemplate spec or an inline
// spec.provider into an EC2NodeClass named name; path prefixes warnings.
func (c *converter) fromAWSProvider(where, path, name string, p karpenter.AWSProvider) (*v1alpha1.EC2NodeClass, error) {
	class := newEC2NodeClass(metav1.ObjectMeta{Name: name})
	out := &class.Spec
	ids, tags := splitSelector(p.SubnetSelector, "aws-ids", "aws::ids")
	for _, id := range ids {
		out.SubnetSelectorTerms = append(out.SubnetSelectorTerms, v1alpha1.SubnetSelectorTerm{ID: id})
	}
	if len(tags) > 0 {
		if len(ids) > 0 {
			return nil, fmt.Errorf("%s.subnetSelector: aws-ids and tags cannot be combined in an EC2NodeClass", path)
		}
		out.SubnetSelectorTerms = []v1alpha1.SubnetSelectorTerm{{Tags: tags}}
	}
	if len(out.SubnetSelectorTerms) == 0 {
		c.warnf(where, "%s.subnetSelector is empty; add spec.subnetSelectorTerms before applying", path)
	}
	ids, tags = splitSelector(p.SecurityGroupSelector, "aws-ids", "aws::ids")
	for _, id := range ids {
		out.SecurityGroupSelectorTerms = append(out.SecurityGroupSelectorTerms, v1alpha1.SecurityGroupSelectorTerm{ID: id})
	}
	if len(tags) > 0 {
		if len(ids) > 0 {
			return nil, fmt.Errorf("%s.securityGroupSelector: aws-ids and tags cannot be combined in an EC2NodeClass", path)
		}
		out.SecurityGroupSelectorTerms = []v1alpha1.SecurityGroupSelectorTerm{{Tags: tags}}
	}
	if len(out.SecurityGroupSelectorTerms) == 0 {
		c.warnf(where, "%s.securityGroupSelector is empty; add spec.securityGroupSelectorTerms before applying", path)
	}
	var terms []v1alpha1.AMISelectorTerm
	ids, tags = splitSelector(p.AMISelector, "aws-ids", "aws::ids")
	for _, id := range ids {
		terms = append(terms, v1alpha1.AMISelectorTerm{ID: id})
	}
	amiName, owners := tags["aws::name"], tags["aws::owners"]
	delete(tags, "aws::name")
	delete(tags, "aws::owners")
	if len(tags) > 0 || amiName != "" || owners != "" {
		if len(ids) > 0 {
			return nil, fmt.Errorf("%s.amiSelector: aws::ids cannot be combined with other keys in an EC2NodeClass", path)
		}
		if len(tags) == 0 {
			tags = nil
		}
		t := v1alpha1.AMISelectorTerm{Name: amiName, Tags: tags}
		if owners == "" {
			terms = append(terms, t)
		}
		for _, o := range splitList(owners) {
			t.Owner = o
			terms = append(terms, t)
		}
	}
	if err := c.amis(where, path, p.AMIFamily, terms, out); err != nil {
		return nil, err
	}
	if p.InstanceProfile != nil {
		out.InstanceProfile = p.InstanceProfile
	} else {
		c.warnf(where, "%s.instanceProfile is not set (Karpenter took it from its settings); set spec.role or spec.instanceProfile before applying", path)
	}
	out.UserData = p.UserData
	out.Tags = maps.Clone(p.Tags)
	out.BlockDeviceMappings = c.blockDevices(where, p.BlockDeviceMappings)
	out.MetadataOptions = metadataOptions(p.MetadataOptions)
	out.DetailedMonitoring = p.DetailedMonitoring
	if p.Context != nil {
		c.warnf(where, "%s.context dropped: launch contexts are not supported", path)
	}
	if p.LaunchTemplate != nil {
		return nil, fmt.Errorf("%s.launchTemplate: launch templates cannot be imported; write their settings into the EC2NodeClass", path)
	}
	return class, nil
}

// splitSelector splits a v1alpha5 selector into the IDs under any of the
// idKeys (comma-separated) and the remaining tags.
func splitSelector(sel map[string]string, idKeys ...string) (ids []string, tags map[string]string) {
	tags = map[string]string{}
	for k, v := range sel {
		if slices.Contains(idKeys, k) {
			ids = append(ids, splitList(v)...)
			continue
		}
		tags[k] = v
	}
	slices.Sort(ids)
	return ids, tags
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
