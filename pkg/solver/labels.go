package solver

// Well-known label keys the solver itself sets on candidate nodes. Cloud
// providers put the instance-type labels (type, family, size, arch, ...) into
// InstanceType.Labels.
const (
	LabelZone         = "topology.kubernetes.io/zone"
	LabelCapacityType = "karpenter.sh/capacity-type"
	LabelNodePool     = "karpenter.sh/nodepool"
	LabelInstanceType = "node.kubernetes.io/instance-type"
)

// candidateLabels are the labels a new node of one instance type, offering
// and pool would carry.
type candidateLabels struct {
	zone, capacityType string
	pool, typ          map[string]string
}

// Label implements Labels: offering labels first, then the pool's, then the
// instance type's.
func (l *candidateLabels) Label(key string) (string, bool) {
	switch key {
	case LabelZone:
		return l.zone, l.zone != ""
	case LabelCapacityType:
		return l.capacityType, l.capacityType != ""
	}
	if v, ok := l.pool[key]; ok {
		return v, true
	}
	v, ok := l.typ[key]
	return v, ok
}
