package karpenter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Label keys the v1alpha5 defaults look at.
const (
	labelCapacityType       = v1alpha1.LabelCapacityType
	labelArch               = "kubernetes.io/arch"
	labelInstanceType       = "node.kubernetes.io/instance-type"
	labelInstanceFamily     = "karpenter.k8s.aws/instance-family"
	labelInstanceCategory   = "karpenter.k8s.aws/instance-category"
	labelInstanceGeneration = "karpenter.k8s.aws/instance-generation"
)

// ProvisionerDefaults returns the requirements Karpenter's AWS webhook
// added to a v1alpha5 Provisioner that lacked them, given its requirements
// (spec.requirements and, in the hybrid layout, the template's; deprecated
// beta keys count): on-demand capacity
// without a capacity-type requirement, amd64 without an arch one, and, with
// no requirement on the instance type, family, category or generation, the
// general-purpose categories c, m and r of generation 3 and later. note
// says what was added, for a warning; both are empty when nothing was.
// Karpenter's general-purpose instance requirements: the instance
// categories and the generation they must exceed, as its AWS webhook
// defaulted v1alpha5 Provisioners and as aws/karpenter-provider-aws
// examples/v1/general-purpose.yaml recommends for NodePools.
var (
	GeneralPurposeCategories      = []string{"c", "m", "r"}
	GeneralPurposeGenerationAbove = "2"
)

func ProvisionerDefaults(given ...[]Requirement) (reqs []Requirement, note string) {
	has := func(names ...string) bool {
		for _, list := range given {
			for _, r := range list {
				if slices.Contains(names, r.Key) {
					return true
				}
			}
		}
		return false
	}
	if !has(labelCapacityType) {
		reqs = append(reqs, Requirement{Key: labelCapacityType, Operator: "In", Values: []string{"on-demand"}})
	}
	if !has(labelArch, "beta.kubernetes.io/arch") {
		reqs = append(reqs, Requirement{Key: labelArch, Operator: "In", Values: []string{"amd64"}})
	}
	if !has(labelInstanceType, "beta.kubernetes.io/instance-type", labelInstanceFamily, labelInstanceCategory, labelInstanceGeneration) {
		reqs = append(reqs,
			Requirement{Key: labelInstanceCategory, Operator: "In", Values: slices.Clone(GeneralPurposeCategories)},
			Requirement{Key: labelInstanceGeneration, Operator: "Gt", Values: []string{GeneralPurposeGenerationAbove}})
	}
	if len(reqs) == 0 {
		return nil, ""
	}
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = fmt.Sprintf("%s %s [%s]", r.Key, r.Operator, strings.Join(r.Values, " "))
	}
	return reqs, "planned with the requirements Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: " + strings.Join(parts, ", ")
}
