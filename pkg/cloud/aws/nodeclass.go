package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// AMI families, as EC2NodeClass spells them.
const (
	FamilyAL2          = "AL2"
	FamilyAL2023       = "AL2023"
	FamilyBottlerocket = "Bottlerocket"
	FamilyCustom       = "Custom"
)

// resolvedClass is what an EC2NodeClass's selector terms resolved to.
type resolvedClass struct {
	name       string
	generation int64
	at         time.Time
	family     string
	status     v1alpha1.EC2NodeClassStatus
	images     []image // newest first, one per architecture
	spec       v1alpha1.EC2NodeClassSpec
	tags       map[string]string
}

type image struct {
	id, name, arch string // arch: amd64 or arm64
	created        time.Time
}

func (rc *resolvedClass) architectures() map[string]bool {
	out := map[string]bool{}
	for _, im := range rc.images {
		out[im.arch] = true
	}
	return out
}

func (rc *resolvedClass) imageFor(arch string) (image, bool) {
	for _, im := range rc.images {
		if im.arch == arch {
			return im, true
		}
	}
	return image{}, false
}

// amiFamily returns the class's image family: spec.amiFamily, else the
// family of its alias term.
func amiFamily(nc *v1alpha1.EC2NodeClass) string {
	if nc.Spec.AMIFamily != nil && *nc.Spec.AMIFamily != "" {
		return *nc.Spec.AMIFamily
	}
	for _, t := range nc.Spec.AMISelectorTerms {
		if fam, _, ok := strings.Cut(t.Alias, "@"); ok {
			switch fam {
			case "al2":
				return FamilyAL2
			case "al2023":
				return FamilyAL2023
			case "bottlerocket":
				return FamilyBottlerocket
			default:
				return fam
			}
		}
	}
	return FamilyCustom
}

// Resolve looks up the subnets, security groups and images an EC2NodeClass
// selects and returns the status to write back on it, with a Ready
// condition. When a selector matches nothing it returns the status (Ready
// False, with the reason) and a *cloud.NodeClassNotReadyError; other errors
// are transient API failures. Successful resolutions are cached for Create
// and InstanceTypes.
func (p *Provider) Resolve(ctx context.Context, nc *v1alpha1.EC2NodeClass) (v1alpha1.EC2NodeClassStatus, error) {
	status := *nc.Status.DeepCopy()
	notReady := func(reason, msg string) (v1alpha1.EC2NodeClassStatus, error) {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: reason, Message: msg, ObservedGeneration: nc.Generation})
		return status, &cloud.NodeClassNotReadyError{NodeClass: nc.Name, Reason: msg}
	}
	subnets, err := p.resolveSubnets(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		return status, err
	}
	if len(subnets) == 0 {
		return notReady("SubnetsNotFound", "no subnet matches subnetSelectorTerms")
	}
	groups, err := p.resolveSecurityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		return status, err
	}
	if len(groups) == 0 {
		return notReady("SecurityGroupsNotFound", "no security group matches securityGroupSelectorTerms")
	}
	family := amiFamily(nc)
	if strings.HasPrefix(strings.ToLower(family), "windows") {
		return notReady("AMIFamilyNotSupported", fmt.Sprintf("the %s image family is not supported by rightsize yet", family))
	}
	images, err := p.resolveImages(ctx, family, nc.Spec.AMISelectorTerms)
	var nr *cloud.NodeClassNotReadyError
	if errors.As(err, &nr) {
		return notReady("AMIsNotFound", nr.Reason)
	}
	if err != nil {
		return status, err
	}
	if len(images) == 0 {
		return notReady("AMIsNotFound", "no image matches amiSelectorTerms")
	}
	status.Subnets, status.SecurityGroups, status.AMIs = subnets, groups, nil
	for _, im := range images {
		status.AMIs = append(status.AMIs, v1alpha1.AMI{ID: im.id, Name: im.name, Requirements: []v1alpha1.NodeSelectorRequirement{
			{Key: cloud.LabelArch, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{im.arch}},
		}})
	}
	status.InstanceProfile = nc.Spec.Role
	if nc.Spec.InstanceProfile != nil {
		status.InstanceProfile = *nc.Spec.InstanceProfile
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: "Resolved", Message: fmt.Sprintf("%d subnets, %d security groups, %d images", len(subnets), len(groups), len(images)),
		ObservedGeneration: nc.Generation})
	rc := resolvedClass{name: nc.Name, generation: nc.Generation, at: p.opts.Now(), family: family, status: status, images: images,
		spec: *nc.Spec.DeepCopy()}
	p.ncMu.Lock()
	p.resolved[nc.Name] = rc
	p.ncMu.Unlock()
	return status, nil
}

// resolvedClass returns the cached resolution of the named class, resolving
// it again when it changed or the cache is older than five minutes.
func (p *Provider) resolvedClass(ctx context.Context, name string) (*resolvedClass, error) {
	if p.opts.NodeClasses == nil {
		return nil, &cloud.NodeClassNotReadyError{NodeClass: name, Reason: "the aws provider was built without a way to read EC2NodeClasses"}
	}
	nc, err := p.opts.NodeClasses(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("aws: reading EC2NodeClass %s: %w", name, err)
	}
	if nc == nil {
		return nil, &cloud.NodeClassNotReadyError{NodeClass: name, Reason: "it does not exist"}
	}
	p.ncMu.Lock()
	rc, ok := p.resolved[name]
	p.ncMu.Unlock()
	if ok && rc.generation == nc.Generation && p.opts.Now().Sub(rc.at) < DefaultNodeClassResolveTTL {
		return &rc, nil
	}
	if _, err := p.Resolve(ctx, nc); err != nil {
		return nil, err
	}
	p.ncMu.Lock()
	rc = p.resolved[name]
	p.ncMu.Unlock()
	return &rc, nil
}

// tagFilters turns selector tags into EC2 filters: "*" means any value.
func tagFilters(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []ec2types.Filter
	for _, k := range keys {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

func (p *Provider) resolveSubnets(ctx context.Context, terms []v1alpha1.SubnetSelectorTerm) ([]v1alpha1.Subnet, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	seen := map[string]v1alpha1.Subnet{}
	for _, t := range terms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(t.Tags)}
		if t.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{t.ID}})
		}
		pages := ec2.NewDescribeSubnetsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("DescribeSubnets: %w", err)
			}
			for _, s := range out.Subnets {
				seen[aws.ToString(s.SubnetId)] = v1alpha1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)}
				p.rememberSubnetIPs(aws.ToString(s.SubnetId), aws.ToInt32(s.AvailableIpAddressCount))
			}
		}
	}
	out := make([]v1alpha1.Subnet, 0, len(seen))
	for _, s := range seen {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b v1alpha1.Subnet) int { return strings.Compare(a.Zone+a.ID, b.Zone+b.ID) })
	return out, nil
}

func (p *Provider) resolveSecurityGroups(ctx context.Context, terms []v1alpha1.SecurityGroupSelectorTerm) ([]v1alpha1.SecurityGroup, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	seen := map[string]v1alpha1.SecurityGroup{}
	for _, t := range terms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(t.Tags)}
		if t.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{t.ID}})
		}
		if t.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{t.Name}})
		}
		pages := ec2.NewDescribeSecurityGroupsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("DescribeSecurityGroups: %w", err)
			}
			for _, g := range out.SecurityGroups {
				seen[aws.ToString(g.GroupId)] = v1alpha1.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName)}
			}
		}
	}
	out := make([]v1alpha1.SecurityGroup, 0, len(seen))
	for _, g := range seen {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b v1alpha1.SecurityGroup) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// aliasParameters returns the public SSM parameters holding the image IDs
// of an alias (family@version), per architecture.
func aliasParameters(alias, k8sVersion string) (map[string]string, error) {
	fam, version, ok := strings.Cut(alias, "@")
	if !ok || version == "" {
		return nil, fmt.Errorf("alias %q is not family@version", alias)
	}
	if k8sVersion == "" {
		return nil, errors.New("the image alias needs the cluster's Kubernetes version; start the operator with --kubernetes-version or give it access to the API server's version")
	}
	latest := version == "latest"
	v := strings.TrimPrefix(version, "v")
	switch fam {
	case "al2023":
		out := map[string]string{}
		for arch, ssmArch := range map[string]string{"amd64": "x86_64", "arm64": "arm64"} {
			base := "/aws/service/eks/optimized-ami/" + k8sVersion + "/amazon-linux-2023/" + ssmArch + "/standard/"
			if latest {
				out[arch] = base + "recommended/image_id"
			} else {
				out[arch] = base + "amazon-eks-node-al2023-" + ssmArch + "-standard-" + k8sVersion + "-v" + v + "/image_id"
			}
		}
		return out, nil
	case "al2":
		base := "/aws/service/eks/optimized-ami/" + k8sVersion
		if latest {
			return map[string]string{"amd64": base + "/amazon-linux-2/recommended/image_id", "arm64": base + "/amazon-linux-2-arm64/recommended/image_id"}, nil
		}
		return map[string]string{
			"amd64": base + "/amazon-linux-2/amazon-eks-node-" + k8sVersion + "-v" + v + "/image_id",
			"arm64": base + "/amazon-linux-2-arm64/amazon-eks-arm64-node-" + k8sVersion + "-v" + v + "/image_id",
		}, nil
	case "bottlerocket":
		out := map[string]string{}
		for arch, ssmArch := range map[string]string{"amd64": "x86_64", "arm64": "arm64"} {
			tag := v
			if latest {
				tag = "latest"
			}
			out[arch] = "/aws/service/bottlerocket/aws-k8s-" + k8sVersion + "/" + ssmArch + "/" + tag + "/image_id"
		}
		return out, nil
	}
	return nil, fmt.Errorf("alias family %q is not supported", fam)
}

// getParameter reads one SSM parameter; found is false when it does not exist.
func (p *Provider) getParameter(ctx context.Context, name string) (value string, found bool, err error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	var nf *ssmtypes.ParameterNotFound
	if errors.As(err, &nf) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("ssm GetParameter %s: %w", name, err)
	}
	return aws.ToString(out.Parameter.Value), true, nil
}

func (p *Provider) resolveImages(ctx context.Context, family string, terms []v1alpha1.AMISelectorTerm) ([]image, error) {
	var all []image
	for _, t := range terms {
		var ids []string
		in := &ec2.DescribeImagesInput{}
		switch {
		case t.Alias != "":
			params, err := aliasParameters(t.Alias, p.opts.KubernetesVersion)
			if err != nil {
				return nil, &cloud.NodeClassNotReadyError{Reason: err.Error()}
			}
			for _, arch := range []string{"amd64", "arm64"} {
				id, found, err := p.getParameter(ctx, params[arch])
				if err != nil {
					return nil, err
				}
				if found {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				return nil, &cloud.NodeClassNotReadyError{Reason: fmt.Sprintf("no image is published for alias %s and Kubernetes %s", t.Alias, p.opts.KubernetesVersion)}
			}
		case t.SSMParameter != "":
			id, found, err := p.getParameter(ctx, t.SSMParameter)
			if err != nil {
				return nil, err
			}
			if !found {
				return nil, &cloud.NodeClassNotReadyError{Reason: fmt.Sprintf("SSM parameter %s does not exist", t.SSMParameter)}
			}
			ids = append(ids, id)
		case t.ID != "":
			ids = append(ids, t.ID)
		default:
			in.Filters = tagFilters(t.Tags)
			if t.Name != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{t.Name}})
			}
			if t.Owner != "" {
				in.Owners = []string{t.Owner}
			} else {
				in.Owners = []string{"self", "amazon"}
			}
		}
		if len(ids) > 0 {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("image-id"), Values: ids})
		}
		found, err := p.describeImages(ctx, in)
		if err != nil {
			return nil, err
		}
		all = append(all, found...)
	}
	// The newest image of each architecture.
	slices.SortStableFunc(all, func(a, b image) int { return b.created.Compare(a.created) })
	var out []image
	for _, im := range all {
		if !slices.ContainsFunc(out, func(o image) bool { return o.arch == im.arch }) {
			out = append(out, im)
		}
	}
	return out, nil
}

func (p *Provider) describeImages(ctx context.Context, in *ec2.DescribeImagesInput) ([]image, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	var out []image
	pages := ec2.NewDescribeImagesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeImages: %w", err)
		}
		for _, im := range page.Images {
			arch := ""
			switch im.Architecture {
			case ec2types.ArchitectureValuesX8664:
				arch = "amd64"
			case ec2types.ArchitectureValuesArm64:
				arch = "arm64"
			default:
				continue
			}
			created, _ := time.Parse(time.RFC3339, aws.ToString(im.CreationDate))
			out = append(out, image{id: aws.ToString(im.ImageId), name: aws.ToString(im.Name), arch: arch, created: created})
		}
	}
	return out, nil
}

func (p *Provider) rememberSubnetIPs(id string, free int32) { p.subnetIPs.Store(id, free) }

func (p *Provider) subnetFreeIPs(id string) int32 {
	if v, ok := p.subnetIPs.Load(id); ok {
		return v.(int32)
	}
	return 0
}
