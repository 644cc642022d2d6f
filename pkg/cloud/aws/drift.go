package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// instanceListTTL is how long the listing of the cluster's instances that
// IsDrifted reads subnets and security groups from is reused: one
// DescribeInstances for the whole cluster rather than one per NodeClaim.
const instanceListTTL = time.Minute

// IsDrifted implements cloud.CloudProvider for NodeClaims of an
// EC2NodeClass, in Karpenter's order:
//
//   - static: the class's settings other than its selector terms (see
//     v1alpha1.EC2NodeClassSpec.Hash) changed since the launch;
//   - image: the instance's image is no longer among the images the class
//     resolves to (a new image published for an alias, a changed AMI
//     selector);
//   - subnet: the instance's subnet is no longer among the class's subnets;
//   - security groups: the instance's groups differ from the class's;
//   - capacity reservation: the instance's reservation is no longer among
//     the active ones the class selects.
//
// The class's resolution is the one Create uses (re-resolved when the
// class changes and every five minutes); the instances' subnets and groups
// come from one listing of the cluster's instances, refreshed at most once
// a minute.
func (p *Provider) IsDrifted(ctx context.Context, claim *v1alpha1.NodeClaim) (string, error) {
	ref := claim.Spec.NodeClassRef
	if ref.Kind != "EC2NodeClass" {
		return "", nil
	}
	rc, err := p.resolvedClass(ctx, ref.Name)
	if err != nil {
		return "", err
	}
	if why := cloud.StaticDrift(claim, ref.Kind, rc.name, rc.spec.Hash(), v1alpha1.EC2NodeClassHashVersion); why != "" {
		return why, nil
	}
	if id := claim.Status.ImageID; id != "" && len(rc.status.AMIs) > 0 &&
		!slices.ContainsFunc(rc.status.AMIs, func(a v1alpha1.AMI) bool { return a.ID == id }) {
		ids := make([]string, len(rc.status.AMIs))
		for i, a := range rc.status.AMIs {
			ids[i] = a.ID
		}
		return fmt.Sprintf("its image %s is no longer among the images EC2NodeClass %s selects (%s)", id, rc.name, strings.Join(ids, ", ")), nil
	}
	if claim.Status.ProviderID == "" {
		return "", nil
	}
	in, err := p.listedInstance(ctx, claim.Status.ProviderID)
	if cloud.IsNotFound(err) {
		// Gone: garbage collection deletes the claim; nothing to replace.
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if subnet := aws.ToString(in.SubnetId); subnet != "" && len(rc.status.Subnets) > 0 &&
		!slices.ContainsFunc(rc.status.Subnets, func(s v1alpha1.Subnet) bool { return s.ID == subnet }) {
		return fmt.Sprintf("its subnet %s is no longer among the subnets EC2NodeClass %s selects", subnet, rc.name), nil
	}
	have := make([]string, 0, len(in.SecurityGroups))
	for _, g := range in.SecurityGroups {
		have = append(have, aws.ToString(g.GroupId))
	}
	slices.Sort(have)
	if want := sortedSecurityGroupIDs(rc.status.SecurityGroups); len(have) > 0 && len(want) > 0 && !slices.Equal(have, want) {
		return fmt.Sprintf("its security groups (%s) are not the ones EC2NodeClass %s selects now (%s)", strings.Join(have, ", "), rc.name,
			strings.Join(want, ", ")), nil
	}
	return p.reservationDrift(ctx, in, rc)
}

// listedInstance returns the instance behind a provider ID from the
// listing of the cluster's instances, listing them again when the listing
// is older than instanceListTTL, and describing the one instance when it
// was launched since. It returns a *cloud.NotFoundError when the instance
// is gone.
func (p *Provider) listedInstance(ctx context.Context, providerID string) (*ec2types.Instance, error) {
	id, err := ParseProviderID(providerID)
	if err != nil {
		return nil, err
	}
	p.instMu.Lock()
	defer p.instMu.Unlock()
	if now := p.opts.Now(); p.instances == nil || now.Sub(p.instAt) >= instanceListTTL {
		found, err := p.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + TagCluster), Values: []string{p.opts.ClusterName}},
			{Name: aws.String("instance-state-name"), Values: liveStates},
		}})
		if err != nil {
			return nil, fmt.Errorf("DescribeInstances of the cluster's instances: %w", err)
		}
		p.instances = make(map[string]ec2types.Instance, len(found))
		for _, in := range found {
			p.instances[aws.ToString(in.InstanceId)] = in
		}
		p.instAt = now
	}
	if in, ok := p.instances[id]; ok {
		return &in, nil
	}
	in, err := p.instance(ctx, providerID)
	if err != nil {
		return nil, err
	}
	p.instances[id] = *in
	return in, nil
}
