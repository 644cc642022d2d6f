package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Versions of the node class hashes (AnnotationNodeClassHashVersion). Bump
// one when what its Hash covers changes: claims stamped with another
// version are then not compared, rather than all drifting at once.
const (
	EC2NodeClassHashVersion = "v1"
	SimNodeClassHashVersion = "v1"
)

// Hash returns a hash of the class's static launch settings: the image
// family, role or instance profile, user data, tags, block devices,
// metadata options, public IP and monitoring settings, and the kubelet
// settings (as Karpenter's hash includes spec.kubelet). The subnet,
// security group and AMI selector terms are left out: what they select
// changes without the spec changing (a new image published for an alias,
// a subnet tagged), so drift on them is judged on what they resolve to
// instead (the class's status against the instance). The family hashed is
// the one launches use: amiFamily, else the alias's (amiFamily AL2023 and
// alias al2023@latest hash alike). Unset and empty values hash alike, as
// do quantities that are equal.
func (s *EC2NodeClassSpec) Hash() string {
	return hashOf(struct {
		AMIFamily                string                `json:"amiFamily,omitempty"`
		Role                     string                `json:"role,omitempty"`
		InstanceProfile          string                `json:"instanceProfile,omitempty"`
		UserData                 string                `json:"userData,omitempty"`
		Tags                     map[string]string     `json:"tags,omitempty"`
		BlockDeviceMappings      []BlockDeviceMapping  `json:"blockDeviceMappings,omitempty"`
		MetadataOptions          *MetadataOptions      `json:"metadataOptions,omitempty"`
		AssociatePublicIPAddress *bool                 `json:"associatePublicIPAddress,omitempty"`
		DetailedMonitoring       bool                  `json:"detailedMonitoring,omitempty"`
		Kubelet                  *KubeletConfiguration `json:"kubelet,omitempty"`
	}{
		AMIFamily:                s.family(),
		Role:                     s.Role,
		InstanceProfile:          deref(s.InstanceProfile),
		UserData:                 deref(s.UserData),
		Tags:                     s.Tags,
		BlockDeviceMappings:      s.BlockDeviceMappings,
		MetadataOptions:          s.MetadataOptions,
		AssociatePublicIPAddress: s.AssociatePublicIPAddress,
		DetailedMonitoring:       s.DetailedMonitoring != nil && *s.DetailedMonitoring,
		Kubelet:                  s.Kubelet,
	})
}

// Hash returns a hash of the class's static launch settings: its tags,
// which the simulated instances carry as a real cloud's would, and its
// kubelet settings, which size the simulated nodes. The other
// fields describe the simulated cloud rather than an instance (how long
// launches take, which offerings are short, the price list), so changing
// them replaces no node.
func (s *SimNodeClassSpec) Hash() string {
	return hashOf(struct {
		Tags    map[string]string     `json:"tags,omitempty"`
		Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	}{Tags: s.Tags, Kubelet: s.Kubelet})
}

// hashOf hashes v's JSON encoding, which sorts map keys and writes
// quantities in canonical form, so equal settings hash alike.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unsupported types fail to encode, and the structs hashed
		// hold none.
		panic(fmt.Sprintf("v1alpha1: hashing %T: %v", v, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// family is the image family launches use, lower case: amiFamily, else
// the family of the alias term.
func (s *EC2NodeClassSpec) family() string {
	if f := deref(s.AMIFamily); f != "" {
		return strings.ToLower(f)
	}
	for _, t := range s.AMISelectorTerms {
		if f, _, ok := strings.Cut(t.Alias, "@"); ok {
			return strings.ToLower(f)
		}
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
