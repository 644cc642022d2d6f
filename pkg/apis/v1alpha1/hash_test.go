package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func hashTestClass() *EC2NodeClass {
	size := resource.MustParse("20Gi")
	return &EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: EC2NodeClassSpec{
			SubnetSelectorTerms:        []SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod"}}},
			SecurityGroupSelectorTerms: []SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod"}}},
			AMISelectorTerms:           []AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-prod",
			UserData:                   ptr.To("echo hello"),
			Tags:                       map[string]string{"team": "platform", "env": "prod"},
			BlockDeviceMappings: []BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), RootVolume: true,
				EBS: &BlockDevice{VolumeSize: &size, VolumeType: ptr.To("gp3"), Encrypted: ptr.To(true)}}},
			MetadataOptions: &MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"),
				HTTPPutResponseHopLimit: ptr.To(int64(1)), HTTPTokens: ptr.To("required")},
		},
	}
}

func TestEC2NodeClassHash(t *testing.T) {
	base := hashTestClass().Spec.Hash()
	if len(base) != 16 {
		t.Fatalf("hash %q: want 16 hex digits", base)
	}
	tests := []struct {
		name    string
		change  func(*EC2NodeClass)
		changed bool
	}{
		// Not static launch settings: the same hash.
		{"status", func(nc *EC2NodeClass) {
			nc.Status.AMIs = []AMI{{ID: "ami-new"}}
			nc.Status.Subnets = []Subnet{{ID: "subnet-new", Zone: "us-east-1a"}}
		}, false},
		{"metadata labels, annotations and generation", func(nc *EC2NodeClass) {
			nc.Labels = map[string]string{"owner": "me"}
			nc.Annotations = map[string]string{"note": "x"}
			nc.Generation = 7
		}, false},
		{"subnet selector terms (dynamic)", func(nc *EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []SubnetSelectorTerm{{ID: "subnet-abc"}}
		}, false},
		{"security group selector terms (dynamic)", func(nc *EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []SecurityGroupSelectorTerm{{Name: "nodes"}}
		}, false},
		{"AMI selector terms (dynamic)", func(nc *EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []AMISelectorTerm{{Alias: "al2023@v20260501"}}
		}, false},
		{"tags rebuilt in another order", func(nc *EC2NodeClass) {
			nc.Spec.Tags = map[string]string{"env": "prod", "team": "platform"}
		}, false},
		{"an equal volume size spelled differently", func(nc *EC2NodeClass) {
			q := resource.MustParse("20480Mi")
			nc.Spec.BlockDeviceMappings[0].EBS.VolumeSize = &q
		}, false},
		{"detailed monitoring false instead of unset", func(nc *EC2NodeClass) { nc.Spec.DetailedMonitoring = ptr.To(false) }, false},
		{"amiFamily spelled out as the alias's family", func(nc *EC2NodeClass) { nc.Spec.AMIFamily = ptr.To("AL2023") }, false},
		{"images chosen by ID in the alias's family", func(nc *EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []AMISelectorTerm{{ID: "ami-0123"}}
			nc.Spec.AMIFamily = ptr.To("AL2023")
		}, false},

		// Static launch settings: a new hash each.
		{"amiFamily", func(nc *EC2NodeClass) { nc.Spec.AMIFamily = ptr.To("Bottlerocket") }, true},
		{"the alias's family", func(nc *EC2NodeClass) { nc.Spec.AMISelectorTerms = []AMISelectorTerm{{Alias: "bottlerocket@latest"}} }, true},
		{"role", func(nc *EC2NodeClass) { nc.Spec.Role = "OtherRole" }, true},
		{"instance profile", func(nc *EC2NodeClass) { nc.Spec.Role, nc.Spec.InstanceProfile = "", ptr.To("profile") }, true},
		{"user data", func(nc *EC2NodeClass) { nc.Spec.UserData = ptr.To("echo bye") }, true},
		{"a tag value", func(nc *EC2NodeClass) { nc.Spec.Tags["team"] = "web" }, true},
		{"a tag added", func(nc *EC2NodeClass) { nc.Spec.Tags["cost-center"] = "42" }, true},
		{"volume size", func(nc *EC2NodeClass) {
			q := resource.MustParse("40Gi")
			nc.Spec.BlockDeviceMappings[0].EBS.VolumeSize = &q
		}, true},
		{"volume type", func(nc *EC2NodeClass) { nc.Spec.BlockDeviceMappings[0].EBS.VolumeType = ptr.To("gp2") }, true},
		{"a second disk", func(nc *EC2NodeClass) {
			nc.Spec.BlockDeviceMappings = append(nc.Spec.BlockDeviceMappings, BlockDeviceMapping{DeviceName: ptr.To("/dev/xvdb")})
		}, true},
		{"metadata hop limit", func(nc *EC2NodeClass) { nc.Spec.MetadataOptions.HTTPPutResponseHopLimit = ptr.To(int64(2)) }, true},
		{"metadata tokens", func(nc *EC2NodeClass) { nc.Spec.MetadataOptions.HTTPTokens = ptr.To("optional") }, true},
		{"public IP", func(nc *EC2NodeClass) { nc.Spec.AssociatePublicIPAddress = ptr.To(false) }, true},
		{"detailed monitoring", func(nc *EC2NodeClass) { nc.Spec.DetailedMonitoring = ptr.To(true) }, true},
		{"kubelet settings added", func(nc *EC2NodeClass) { nc.Spec.Kubelet = &KubeletConfiguration{MaxPods: ptr.To(int32(110))} }, true},
		{"kubelet settings that change no allocatable", func(nc *EC2NodeClass) {
			nc.Spec.Kubelet = &KubeletConfiguration{ClusterDNS: []string{"10.0.0.10"}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := hashTestClass()
			tt.change(nc)
			got := nc.Spec.Hash()
			if (got != base) != tt.changed {
				t.Errorf("hash %s, base %s: changed = %v, want %v", got, base, got != base, tt.changed)
			}
			if again := nc.DeepCopy().Spec.Hash(); again != got {
				t.Errorf("hash of a copy %s != %s", again, got)
			}
		})
	}
	withKubelet := hashTestClass()
	withKubelet.Spec.Kubelet = &KubeletConfiguration{MaxPods: ptr.To(int32(110))}
	changed := withKubelet.DeepCopy()
	changed.Spec.Kubelet.MaxPods = ptr.To(int32(58))
	if withKubelet.Spec.Hash() == changed.Spec.Hash() {
		t.Errorf("changing kubelet maxPods from 110 to 58 keeps the hash")
	}
	unset, empty := hashTestClass(), hashTestClass()
	unset.Spec.UserData, empty.Spec.UserData = nil, ptr.To("")
	if unset.Spec.Hash() != empty.Spec.Hash() {
		t.Errorf("unset and empty user data hash differently")
	}
}

func TestSimNodeClassHash(t *testing.T) {
	base := SimNodeClass{Spec: SimNodeClassSpec{Tags: map[string]string{"team": "platform"}}}
	h := base.Spec.Hash()
	tests := []struct {
		name    string
		change  func(*SimNodeClass)
		changed bool
	}{
		{"registration delay (the simulated cloud, not the instance)", func(s *SimNodeClass) {
			s.Spec.RegistrationDelay = &metav1.Duration{Duration: 30e9}
		}, false},
		{"insufficient capacity", func(s *SimNodeClass) {
			s.Spec.InsufficientCapacity = []SimOffering{{InstanceType: "m5.large"}}
		}, false},
		{"instance types file", func(s *SimNodeClass) { s.Spec.InstanceTypesFile = "/types.json" }, false},
		{"status and labels", func(s *SimNodeClass) {
			s.Labels = map[string]string{"a": "b"}
			s.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue}}
		}, false},
		{"a tag value", func(s *SimNodeClass) { s.Spec.Tags["team"] = "web" }, true},
		{"tags removed", func(s *SimNodeClass) { s.Spec.Tags = nil }, true},
		{"kubelet maxPods", func(s *SimNodeClass) { s.Spec.Kubelet = &KubeletConfiguration{MaxPods: ptr.To(int32(5))} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base.DeepCopy()
			tt.change(s)
			if got := s.Spec.Hash(); (got != h) != tt.changed {
				t.Errorf("hash %s, base %s: changed = %v, want %v", got, h, got != h, tt.changed)
			}
		})
	}
	if (&SimNodeClassSpec{}).Hash() != (&SimNodeClassSpec{Tags: map[string]string{}}).Hash() {
		t.Errorf("no tags and empty tags hash differently")
	}
}
